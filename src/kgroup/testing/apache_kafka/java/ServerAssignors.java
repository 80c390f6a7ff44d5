// The KIP-848 group coordinator's assignors (UniformAssignor, RangeAssignor of
// org.apache.kafka.coordinator.group.assignor) and the share groups' SimpleAssignor, the "server-assign" op of kgroup's oracle (AssignorOracle.java).
//
// The GroupSpec is built as Kafka's TargetAssignmentBuilder builds it: members put into a HashMap in the
// given order; each member's current assignment as Assignment.fromRecord rebuilds it from a
// target-assignment record (a HashMap filled in record order, each topic's partitions a HashSet); its
// subscribed topic ids a HashSet filled in the given order; the inverted assignment from all of them.
//
// Item:   {"assignor": "uniform"|"range"|"simple", "topics": [{"id": "<base64 Uuid>", "partitions": 3}],
//          "members": [{"id": "m1", "subscription": 0, "assignment": [["<id>", [0, 2]]],
//                       "instanceId": null, "rackId": null}],
//          "subscriptions": [["<id>", ...]]   (members giving one index share one HashSet, as cheap as
//                                              Kafka's TopicIds view; a member may give "topics" instead),
//          "subscriptionType": "HOMOGENEOUS"  (optional; default: ModernGroup.subscriptionType's rule over
//                                              the members' subscribed ids),
//          "assignable": [["<id>", [0, 1]]]   (optional: GroupSpecImpl's topicPartitionAllowedMap, a share
//                                              group's initialised partitions; absent = every partition)
//          "warmup": 0, "repeat": 0}          (optional: untimed, then timed assign() calls first)
// Result: {"memberIds": [...], "subscriptionType": "...",
//          "assignment": {"m1": [["<id>", [0, 2]]]}   (every list in the order Kafka's collections iterate),
//          "nanos": [...]}                             (System.nanoTime around each timed call)
//         and "error": "<exception>: <message>" instead of "assignment" when the assignor throws.
//
// The SubscribedTopicDescriber is kgroup's own and answers partition counts; 4.4.0's assignors never ask
// it for racks (racksForPartition), so it has none.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.PartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.SimpleAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

final class ServerAssignors {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private ServerAssignors() {
    }

    /** SubscribedTopicDescriberImpl reads a metadata image; the assignors only ask for partition counts. */
    private static final class Topics implements SubscribedTopicDescriber {
        private final Map<Uuid, Integer> partitions;

        Topics(Map<Uuid, Integer> partitions) {
            this.partitions = partitions;
        }

        @Override
        public int numPartitions(Uuid topicId) {
            Integer count = partitions.get(topicId);
            return count == null ? -1 : count;
        }

        @Override
        public Set<String> racksForPartition(Uuid topicId, int partition) {
            return Set.of();
        }
    }

    private static PartitionAssignor assignor(String name) {
        switch (name) {
            case "uniform":
                return new UniformAssignor();
            case "range":
                return new RangeAssignor();
            case "simple":
                return new SimpleAssignor();
            default:
                throw new IllegalArgumentException("unknown server assignor '" + name + "'");
        }
    }

    private static String text(JsonNode node, String field) {
        JsonNode value = node.get(field);
        return value == null || value.isNull() ? null : value.asText();
    }

    private static Set<Uuid> topicIdSet(JsonNode ids) {
        List<Uuid> topicIds = new ArrayList<>();
        for (JsonNode id : ids) {
            topicIds.add(Uuid.fromString(id.asText()));
        }
        return new HashSet<>(topicIds);
    }

    static JsonNode assign(JsonNode item) {
        PartitionAssignor assignor = assignor(item.path("assignor").asText());
        Map<Uuid, Integer> partitionCounts = new HashMap<>();
        for (JsonNode topic : item.path("topics")) {
            partitionCounts.put(Uuid.fromString(topic.get("id").asText()), topic.get("partitions").asInt());
        }
        List<Set<Uuid>> shared = new ArrayList<>();
        for (JsonNode subscription : item.path("subscriptions")) {
            shared.add(topicIdSet(subscription));
        }
        Map<String, MemberSubscriptionAndAssignmentImpl> memberSpecs = new HashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        Map<Uuid, Integer> subscriberCounts = new HashMap<>();
        int memberCount = 0;
        for (JsonNode member : item.path("members")) {
            String memberId = member.get("id").asText();
            Set<Uuid> subscribed = member.has("subscription")
                ? shared.get(member.get("subscription").asInt())
                : topicIdSet(member.path("topics"));
            for (Uuid id : subscribed) {
                subscriberCounts.merge(id, 1, Integer::sum);
            }
            memberCount++;
            // Assignment.fromRecord: Collectors.toMap into a HashMap, each topic new HashSet<>(partitions)
            Map<Uuid, Set<Integer>> current = new HashMap<>();
            for (JsonNode entry : member.path("assignment")) {
                Uuid topicId = Uuid.fromString(entry.get(0).asText());
                List<Integer> partitions = new ArrayList<>();
                for (JsonNode partition : entry.get(1)) {
                    partitions.add(partition.asInt());
                }
                if (current.putIfAbsent(topicId, new HashSet<>(partitions)) != null) {
                    throw new IllegalStateException("Duplicate key " + topicId);
                }
                for (int partition : partitions) {
                    inverted.computeIfAbsent(topicId, k -> new HashMap<>()).put(partition, memberId);
                }
            }
            memberSpecs.put(memberId, new MemberSubscriptionAndAssignmentImpl(
                Optional.ofNullable(text(member, "rackId")),
                Optional.ofNullable(text(member, "instanceId")),
                subscribed,
                new Assignment(current)));
        }
        SubscriptionType type;
        String requested = text(item, "subscriptionType");
        if (requested != null) {
            type = SubscriptionType.valueOf(requested);
        } else {
            type = SubscriptionType.HOMOGENEOUS;  // ModernGroup.subscriptionType: every topic has every member
            for (int count : subscriberCounts.values()) {
                if (count != memberCount) {
                    type = SubscriptionType.HETEROGENEOUS;
                    break;
                }
            }
        }
        Optional<Map<Uuid, Set<Integer>>> allowed = Optional.empty();
        if (item.has("assignable") && !item.get("assignable").isNull()) {
            Map<Uuid, Set<Integer>> assignable = new HashMap<>();
            for (JsonNode entry : item.get("assignable")) {
                Set<Integer> partitions = new HashSet<>();
                for (JsonNode partition : entry.get(1)) {
                    partitions.add(partition.asInt());
                }
                assignable.put(Uuid.fromString(entry.get(0).asText()), partitions);
            }
            allowed = Optional.of(assignable);
        }
        GroupSpecImpl spec = new GroupSpecImpl(Collections.unmodifiableMap(memberSpecs), type, inverted, allowed);
        Topics topics = new Topics(partitionCounts);

        ObjectNode answer = NODES.objectNode();
        ArrayNode memberIds = answer.putArray("memberIds");
        for (String memberId : spec.memberIds()) {
            memberIds.add(memberId);
        }
        answer.put("subscriptionType", type.name());
        GroupAssignment result;
        try {
            int warmup = item.path("warmup").asInt(0);
            int repeat = item.path("repeat").asInt(0);
            for (int i = 0; i < warmup; i++) {
                assignor.assign(spec, topics);
            }
            ArrayNode nanos = answer.putArray("nanos");
            for (int i = 0; i < repeat; i++) {
                long start = System.nanoTime();
                assignor.assign(spec, topics);
                nanos.add(System.nanoTime() - start);
            }
            result = assignor.assign(spec, topics);
        } catch (RuntimeException e) {
            answer.put("error", AssignorOracle.describe(e));
            return answer;
        }
        ObjectNode assignment = answer.putObject("assignment");
        for (Map.Entry<String, MemberAssignment> member : result.members().entrySet()) {
            ArrayNode topicsOut = assignment.putArray(member.getKey());
            for (Map.Entry<Uuid, Set<Integer>> topic : member.getValue().partitions().entrySet()) {
                ArrayNode pair = topicsOut.addArray();
                pair.add(topic.getKey().toString());
                ArrayNode partitions = pair.addArray();
                for (int partition : topic.getValue()) {
                    partitions.add(partition);
                }
            }
        }
        return answer;
    }
}
