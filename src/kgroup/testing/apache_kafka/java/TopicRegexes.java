// kgroup's oracle, op "topic-regex": Kafka 4.4's subscribed-topic regexes, asked of Kafka's own code.
//
//   topic-regex  {"pattern": "...", "topics": ["...", ...]}
//                -> {"matches": [the topics Pattern.compile(pattern).matcher(topic).matches()]}
//                 | {"invalid": "<the message of the InvalidRegularExpression Kafka's group coordinator
//                                 throws: Utils.throwIfRegularExpressionIsInvalid>"}
//                 | {"overflow": true}   (RE2/J's recursive parser ran out of stack)
//
// The validation is the group coordinator's own (package-private) method, called by reflection; the
// matching is RE2/J's, as TopicRegexResolver does it. Written for kgroup; it copies none of Kafka's code.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import com.google.re2j.Pattern;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

final class TopicRegexes {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static Method validate;

    private TopicRegexes() {
    }

    private static Method validator() throws ReflectiveOperationException {
        if (validate == null) {
            Class<?> utils = Class.forName("org.apache.kafka.coordinator.group.Utils");
            Method method = utils.getDeclaredMethod("throwIfRegularExpressionIsInvalid", String.class);
            method.setAccessible(true);
            validate = method;
        }
        return validate;
    }

    static JsonNode answer(JsonNode item) throws ReflectiveOperationException {
        ObjectNode out = NODES.objectNode();
        String pattern = item.path("pattern").asText();
        try {
            try {
                validator().invoke(null, pattern);
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (cause instanceof StackOverflowError) {
                    throw (StackOverflowError) cause;
                }
                if (cause != null && "InvalidRegularExpression".equals(cause.getClass().getSimpleName())) {
                    out.put("invalid", cause.getMessage());
                    return out;
                }
                throw e;
            }
            Pattern compiled = Pattern.compile(pattern);
            ArrayNode matches = out.putArray("matches");
            for (JsonNode topic : item.path("topics")) {
                if (compiled.matcher(topic.asText()).matches()) {
                    matches.add(topic.asText());
                }
            }
        } catch (StackOverflowError e) {
            out = NODES.objectNode();
            out.put("overflow", true);
        }
        return out;
    }
}
