package splice.json;

import org.apache.spark.sql.api.java.UDF1;

/** {@link RecordCheck#reason} as a Spark SQL function (registered by
 * operators/json_source.py as splice_record_reason). */
public final class RecordReason implements UDF1<String, String> {
    @Override
    public String call(String text) {
        return RecordCheck.reason(text);
    }
}
