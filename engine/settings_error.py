"""The error of a setting that cannot be used (its own module: the settings
and the storage both raise it, and the settings read the storage's
shorthands, so neither may import the other for it)."""


class SettingsError(ValueError):
    """A setting's value cannot be used; the message names the variable and
    the fix."""
