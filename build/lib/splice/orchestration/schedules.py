"""A schedule per pipeline (stopped until someone turns it on): a scheduled
run lets watermarks that earlier rows advanced take effect, as
``trigger(availableNow=True)`` runs end with a no-data batch."""

from dagster import DefaultScheduleStatus, ScheduleDefinition


def pipeline_schedule(job_name: str, cron: str = "*/5 * * * *") -> ScheduleDefinition:
    return ScheduleDefinition(job_name=job_name, cron_schedule=cron,
                              default_status=DefaultScheduleStatus.STOPPED,
                              name=f"{job_name}_every_5_minutes")
