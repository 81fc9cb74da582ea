package splice.json;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.VariantBuilder;
import org.apache.spark.types.variant.VariantUtil;

/**
 * Whether a record's text is one JSON object and nothing more, as Splice's
 * sources check it (operators/json_source.py, object_verdict), in one parse.
 *
 * The object is built by Spark's own variant builder, from a parser of the
 * factory Spark's parse_json uses (Jackson's defaults), so a text is an
 * object here exactly when try_parse_json gives an object variant: strict
 * JSON, no duplicate key at any depth, within the variant's size limit.
 * The same parser then reads on: the object is whole when nothing but
 * JSON whitespace follows it, which is what the two element counts of
 * object_verdict tell without the jar.
 */
public final class RecordCheck {
    /** The object is whole. */
    public static final String WHOLE = "whole";
    /** Not one strict JSON object (or not JSON at all). */
    public static final String NOT_OBJECT = "not-object";
    /** One object, and more text after it. */
    public static final String TRAILING = "trailing";

    private static final JsonFactory FACTORY = new JsonFactory();

    private RecordCheck() {
    }

    /** The verdict on one record's text (null for a null text). */
    public static String verdict(String text) {
        if (text == null) {
            return null;
        }
        JsonParser parser;
        try {
            parser = FACTORY.createParser(text);
        } catch (Exception e) {
            return NOT_OBJECT;
        }
        try (JsonParser p = parser) {
            Variant value;
            try {
                p.nextToken();
                value = VariantBuilder.parseJson(p, false, true);
            } catch (Exception e) {
                return NOT_OBJECT;
            }
            if (value.getType() != VariantUtil.Type.OBJECT) {
                return NOT_OBJECT;
            }
            try {
                return p.nextToken() == null ? WHOLE : TRAILING;
            } catch (Exception e) {
                return TRAILING;
            }
        } catch (Exception e) {  // closing the parser
            return NOT_OBJECT;
        }
    }
}
