import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The iteration orders of the maps a Produce answer passes through in Kafka's broker, for keys the
 * caller names: {@code TopicIdPartition}s put in the given order (a key may come more than once) into
 * Scala 2.13's {@code immutable.Map} (from {@code Map.empty}, by {@code updated}), a
 * {@code mutable.HashMap} (by {@code update}), a {@code mutable.HashMap.from} that map (what
 * {@code .map} of it builds) and a {@code java.util.HashMap}; each order is given as indices of the
 * keys' first appearance. Also each key's {@code hashCode}.
 */
final class ScalaMaps {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private ScalaMaps() {
    }

    static JsonNode order(JsonNode item) {
        List<TopicIdPartition> keys = new ArrayList<>();
        for (JsonNode k : item.path("keys")) {
            Uuid id = new Uuid(k.get(0).asLong(), k.get(1).asLong());
            keys.add(new TopicIdPartition(id, k.get(3).asInt(), k.get(2).asText()));
        }
        Map<TopicIdPartition, Integer> first = new java.util.HashMap<>();
        scala.collection.immutable.Map<Object, Object> immutable = scala.collection.immutable.Map$.MODULE$.empty();
        scala.collection.mutable.HashMap<Object, Object> mutable = new scala.collection.mutable.HashMap<>();
        java.util.HashMap<TopicIdPartition, Boolean> java = new java.util.HashMap<>();
        for (TopicIdPartition key : keys) {
            first.putIfAbsent(key, first.size());
            immutable = immutable.updated(key, Boolean.TRUE);
            mutable.update(key, Boolean.TRUE);
            java.put(key, Boolean.TRUE);
        }
        ObjectNode out = NODES.objectNode();
        ArrayNode hashes = out.putArray("hashes");
        keys.forEach(k -> hashes.add(k.hashCode()));
        ArrayNode im = out.putArray("immutable");
        immutable.keysIterator().foreach(k -> im.add(first.get(k)));
        ArrayNode mu = out.putArray("mutable");
        mutable.keysIterator().foreach(k -> mu.add(first.get(k)));
        ArrayNode from = out.putArray("mutable_from");
        scala.collection.mutable.HashMap$.MODULE$.from(mutable).keysIterator().foreach(k -> from.add(first.get(k)));
        ArrayNode ja = out.putArray("java");
        java.keySet().forEach(k -> ja.add(first.get(k)));
        return out;
    }

    /**
     * The orders of Scala 2.13's {@code immutable.Set} of strings the caller names: {@code toSet} of
     * them (a key may come more than once), its {@code filter} by the flags given and by their
     * negation, and the filtered set's {@code map} to equal new strings.
     */
    static JsonNode setOrder(JsonNode item) {
        List<String> names = new ArrayList<>();
        java.util.Set<String> kept = new java.util.HashSet<>();
        for (JsonNode k : item.path("names")) {
            names.add(k.asText());
        }
        for (JsonNode k : item.path("keep")) {
            kept.add(k.asText());
        }
        scala.collection.immutable.Set<String> set = scala.jdk.javaapi.CollectionConverters.asScala(names).toSet();
        scala.collection.immutable.Set<String> in = asSet(set.filter(n -> kept.contains(n)));
        scala.collection.immutable.Set<String> out = asSet(set.filter(n -> !kept.contains(n)));
        scala.collection.immutable.Set<String> mapped = asSet(in.map(n -> new String(n.toCharArray())));
        ObjectNode result = NODES.objectNode();
        for (Map.Entry<String, scala.collection.immutable.Set<String>> e : Map.of("set", set, "kept", in, "dropped", out, "kept_mapped", mapped).entrySet()) {
            ArrayNode listed = result.putArray(e.getKey());
            e.getValue().foreach(n -> listed.add(n));
        }
        return result;
    }

    /** Scala's {@code filter} and {@code map} of a set are sets; Java sees their erased type. */
    @SuppressWarnings("unchecked")
    private static scala.collection.immutable.Set<String> asSet(Object set) {
        return (scala.collection.immutable.Set<String>) set;
    }
}
