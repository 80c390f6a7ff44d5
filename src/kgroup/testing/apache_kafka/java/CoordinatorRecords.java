// The group coordinator's __consumer_offsets records as Kafka writes and reads them: the "record-bytes" and
// "record-read" ops of kgroup's oracle (AssignorOracle.java).
//
// "record-bytes" builds a record from JSON with Kafka's generated *JsonConverter classes (the field names of
// the JSON schemas, camelCase: {"groupId": "g", "memberId": "m"}; a uuid is its base64 string, bytes are
// base64) and serializes it with GroupCoordinatorRecordSerde, the serde the coordinator runtime writes
// __consumer_offsets with:
//   Item:   {"type": 3, "key": {...}, "value": {...} | null, "valueVersion": 0}   (null value: a tombstone)
//   Result: {"key": "<hex>", "value": "<hex>" | null}
// "record-read" deserializes bytes with the same serde and answers them as the converters write JSON:
//   Item:   {"key": "<hex>", "value": "<hex>" | null}
//   Result: {"type": 3, "key": {...}, "value": {...} | null, "valueVersion": 0}
// A converter that refuses the JSON, or bytes the serde refuses, answer {"error": "<exception>: <message>"}.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.CoordinatorRecordType;
import org.apache.kafka.server.common.ApiMessageAndVersion;

import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.HexFormat;

final class CoordinatorRecords {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();
    private static final HexFormat HEX = HexFormat.of();

    private CoordinatorRecords() {
    }

    static JsonNode bytes(JsonNode item) throws ReflectiveOperationException {
        CoordinatorRecordType type = CoordinatorRecordType.fromId((short) item.path("type").asInt());
        ApiMessage key = fromJson(type.newRecordKey().getClass(), item.path("key"), (short) 0);
        JsonNode valueNode = item.get("value");
        CoordinatorRecord record;
        if (valueNode == null || valueNode.isNull()) {
            record = CoordinatorRecord.tombstone(key);
        } else {
            short version = (short) item.path("valueVersion").asInt(0);
            ApiMessage value = fromJson(type.newRecordValue().getClass(), valueNode, version);
            record = CoordinatorRecord.record(key, new ApiMessageAndVersion(value, version));
        }
        ObjectNode result = NODES.objectNode();
        result.put("key", HEX.formatHex(SERDE.serializeKey(record)));
        byte[] value = SERDE.serializeValue(record);
        if (value == null) {
            result.putNull("value");
        } else {
            result.put("value", HEX.formatHex(value));
        }
        return result;
    }

    static JsonNode read(JsonNode item) throws ReflectiveOperationException {
        ByteBuffer key = ByteBuffer.wrap(HEX.parseHex(item.path("key").asText()));
        JsonNode valueNode = item.get("value");
        ByteBuffer value = valueNode == null || valueNode.isNull() ? null : ByteBuffer.wrap(HEX.parseHex(valueNode.asText()));
        CoordinatorRecord record = SERDE.deserialize(key, value);
        ObjectNode result = NODES.objectNode();
        result.put("type", record.key().apiKey());
        result.set("key", toJson(record.key(), (short) 0));
        if (record.value() == null) {
            result.putNull("value");
        } else {
            result.set("value", toJson(record.value().message(), record.value().version()));
            result.put("valueVersion", record.value().version());
        }
        return result;
    }

    private static Class<?> converter(Class<?> message) throws ClassNotFoundException {
        return Class.forName(message.getName() + "JsonConverter");
    }

    private static ApiMessage fromJson(Class<?> message, JsonNode node, short version) throws ReflectiveOperationException {
        Method read = converter(message).getMethod("read", JsonNode.class, short.class);
        return (ApiMessage) read.invoke(null, node, version);
    }

    private static JsonNode toJson(ApiMessage message, short version) throws ReflectiveOperationException {
        Method write = converter(message.getClass()).getMethod("write", message.getClass(), short.class);
        return (JsonNode) write.invoke(null, message, version);
    }
}
