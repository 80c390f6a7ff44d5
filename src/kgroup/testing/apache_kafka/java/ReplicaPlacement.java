// A KRaft controller's replica placement (org.apache.kafka.metadata.placement.StripedReplicaPlacer), the
// "striped-place" op of kgroup's oracle (AssignorOracle.java).
//
// The usable brokers come from the controller's own BrokerHeartbeatManager: the brokers are registered in
// the given order (register(id, fenced), as the controller does when it replays their registrations) and
// the describer lists what its usableBrokers() iterator gives (a HashMap<Integer, ...> walk), with each
// broker's rack. One StripedReplicaPlacer with one java.util.Random(seed) places the topics in turn, as a
// controller's placer does for successive CreateTopics.
//
// Item:   {"seed": 42, "brokers": [{"id": 1, "rack": "a"|null, "fenced": false}, ...],
//          "topics": [{"partitions": 6, "replicationFactor": 3}, ...]}
// Result: {"usable": [1, 2, ...]                        (the describer's broker order),
//          "topics": [{"assignment": [[1, 2, 3], ...]} | {"error": "<exception>: <message>"}, ...]}
//
// Written for kgroup; it calls Kafka's classes, it copies none of their code.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.placement.ClusterDescriber;
import org.apache.kafka.metadata.placement.PartitionAssignment;
import org.apache.kafka.metadata.placement.PlacementSpec;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.metadata.placement.TopicAssignment;
import org.apache.kafka.metadata.placement.UsableBroker;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.function.Function;

final class ReplicaPlacement {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private ReplicaPlacement() {
    }

    static JsonNode place(JsonNode item) throws Exception {
        Map<Integer, Optional<String>> racks = new HashMap<>();
        Object manager = heartbeatManager();
        Method register = manager.getClass().getDeclaredMethod("register", int.class, boolean.class);
        register.setAccessible(true);
        for (JsonNode broker : item.path("brokers")) {
            int id = broker.path("id").asInt();
            JsonNode rack = broker.path("rack");
            racks.put(id, rack.isNull() || rack.isMissingNode() ? Optional.empty() : Optional.of(rack.asText()));
            register.invoke(manager, id, broker.path("fenced").asBoolean(false));
        }
        Method usable = manager.getClass().getDeclaredMethod("usableBrokers", Function.class, Function.class);
        usable.setAccessible(true);
        Function<Integer, Optional<String>> idToRack = racks::get;
        Function<Integer, Boolean> uncordoned = id -> true;
        ClusterDescriber describer = new ClusterDescriber() {
            @Override
            @SuppressWarnings("unchecked")
            public Iterator<UsableBroker> usableBrokers() {
                try {
                    return (Iterator<UsableBroker>) usable.invoke(manager, idToRack, uncordoned);
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException(e);
                }
            }

            @Override
            public Uuid defaultDir(int brokerId) {
                return Uuid.ZERO_UUID;
            }
        };
        ObjectNode result = NODES.objectNode();
        ArrayNode order = result.putArray("usable");
        for (Iterator<UsableBroker> it = describer.usableBrokers(); it.hasNext(); ) {
            order.add(it.next().id());
        }
        StripedReplicaPlacer placer = new StripedReplicaPlacer(new Random(item.path("seed").asLong()));
        ArrayNode topics = result.putArray("topics");
        for (JsonNode topic : item.path("topics")) {
            ObjectNode answer = topics.addObject();
            try {
                TopicAssignment assignment = placer.place(
                    new PlacementSpec(0, topic.path("partitions").asInt(),
                        (short) topic.path("replicationFactor").asInt()),
                    describer);
                ArrayNode partitions = answer.putArray("assignment");
                for (PartitionAssignment partition : assignment.assignments()) {
                    ArrayNode replicas = partitions.addArray();
                    for (int replica : partition.replicas()) {
                        replicas.add(replica);
                    }
                }
            } catch (InvalidReplicationFactorException e) {
                answer.put("error", AssignorOracle.describe(e));
            }
        }
        return result;
    }

    /** The controller's BrokerHeartbeatManager (package-private): a fresh one, reached by reflection. */
    private static Object heartbeatManager() throws Exception {
        Class<?> type = Class.forName("org.apache.kafka.controller.BrokerHeartbeatManager");
        for (Constructor<?> constructor : type.getDeclaredConstructors()) {
            Class<?>[] params = constructor.getParameterTypes();
            if (params.length == 3 && params[1] == Time.class && params[2] == long.class) {
                constructor.setAccessible(true);
                Object logContext = params[0].getDeclaredConstructor().newInstance();  // LogContext()
                return constructor.newInstance(logContext, Time.SYSTEM, 1_000_000_000L);
            }
        }
        throw new IllegalStateException("BrokerHeartbeatManager(LogContext, Time, long) not found");
    }
}
