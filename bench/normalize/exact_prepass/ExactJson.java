package cdclake.bench;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.StringWriter;
import org.apache.spark.sql.api.java.UDF1;

/**
 * JSON bytes to the same JSON with every number token written as a string of its exact text
 * (Jackson's getText() is the token as sent: "1.10" stays "1.10", 300 digits stay 300 digits), so
 * Spark's from_json can read every value as a string without going through a double. Invalid JSON
 * gives null. The number/string distinction is lost: a real decoder would have to keep it.
 */
public final class ExactJson implements UDF1<byte[], String> {
    private static final JsonFactory FACTORY = new JsonFactory();

    @Override
    public String call(byte[] value) throws Exception {
        if (value == null) {
            return null;
        }
        StringWriter out = new StringWriter(value.length + 64);
        try (JsonParser parser = FACTORY.createParser(value);
             JsonGenerator generator = FACTORY.createGenerator(out)) {
            JsonToken token;
            while ((token = parser.nextToken()) != null) {
                if (token == JsonToken.VALUE_NUMBER_INT || token == JsonToken.VALUE_NUMBER_FLOAT) {
                    generator.writeString(parser.getText());
                } else {
                    generator.copyCurrentEvent(parser);
                }
            }
        } catch (JsonProcessingException e) {
            return null;
        }
        return out.toString();
    }
}
