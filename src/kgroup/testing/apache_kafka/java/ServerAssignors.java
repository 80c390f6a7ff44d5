// The KIP-848 group coordinator's assignors (UniformAssignor, RangeAssignor of
// org.apache.kafka.coordinator.group.assignor), driven for kgroup's oracle (see AssignorOracle.java).
//
// The GroupSpec is built the way TargetAssignmentBuilder builds it: a HashMap of member id ->
// MemberSubscriptionAndAssignmentImpl filled in input order, each member's subscribed topic ids (topics
// that exist) and current target assignment, and the inverted target assignment. The
// SubscribedTopicDescriber is kgroup's own: partition counts and, when the input gives them, replica racks.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;

final class ServerAssignors {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private ServerAssignors() {
    }

    static JsonNode assign(JsonNode item) {
        String name = item.path("assignor").asText();
        ConsumerGroupPartitionAssignor assignor;
        if (name.equals("server-uniform")) {
            assignor = new UniformAssignor();
        } else if (name.equals("server-range")) {
            assignor = new RangeAssignor();
        } else {
            throw new IllegalArgumentException("unknown server assignor '" + name + "'");
        }
        JsonNode input = item.path("input");
        JsonNode givenIds = item.path("topicIds");
        Map<String, Uuid> ids = new LinkedHashMap<>();
        Map<Uuid, String> names = new HashMap<>();
        Map<Uuid, Integer> counts = new HashMap<>();
        Map<Uuid, JsonNode> racks = new HashMap<>();
        for (JsonNode topic : input.path("topics")) {
            String topicName = topic.path("name").asText();
            Uuid id;
            if (topic.hasNonNull("topicId")) {
                id = Uuid.fromString(topic.get("topicId").asText());
            } else if (givenIds.hasNonNull(topicName)) {
                id = Uuid.fromString(givenIds.get(topicName).asText());
            } else {
                UUID derived = UUID.nameUUIDFromBytes(topicName.getBytes(StandardCharsets.UTF_8));
                id = new Uuid(derived.getMostSignificantBits(), derived.getLeastSignificantBits());
            }
            ids.put(topicName, id);
            names.put(id, topicName);
            counts.put(id, topic.path("partitions").asInt());
            if (topic.hasNonNull("racks")) {
                racks.put(id, topic.get("racks"));
            }
        }
        Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        Map<String, Integer> subscribers = new HashMap<>();
        int memberCount = 0;
        for (JsonNode member : input.path("members")) {
            memberCount++;
            String memberId = member.path("memberId").asText();
            Set<Uuid> subscribed = new HashSet<>();
            Set<String> subscribedNames = new HashSet<>();
            for (JsonNode t : member.path("topics")) {
                subscribedNames.add(t.asText());
                Uuid id = ids.get(t.asText());
                if (id != null) {
                    subscribed.add(id);
                }
            }
            for (String topicName : subscribedNames) {
                subscribers.merge(topicName, 1, Integer::sum);
            }
            Map<Uuid, Set<Integer>> target = new HashMap<>();
            for (TopicPartition tp : AssignorOracle.partitionList(member.path("assignment"))) {
                Uuid id = ids.get(tp.topic());
                if (id == null) {
                    continue;
                }
                target.computeIfAbsent(id, k -> new HashSet<>()).add(tp.partition());
                inverted.computeIfAbsent(id, k -> new HashMap<>()).put(tp.partition(), memberId);
            }
            Optional<String> rack = member.hasNonNull("rackId") ? Optional.of(member.get("rackId").asText()) : Optional.empty();
            Optional<String> instance = member.hasNonNull("instanceId") ? Optional.of(member.get("instanceId").asText()) : Optional.empty();
            members.put(memberId, new MemberSubscriptionAndAssignmentImpl(rack, instance, subscribed, new Assignment(target)));
        }
        SubscriptionType type = SubscriptionType.HOMOGENEOUS;
        for (int count : subscribers.values()) {
            if (count != memberCount) {
                type = SubscriptionType.HETEROGENEOUS;
                break;
            }
        }
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            @Override
            public int numPartitions(Uuid topicId) {
                return counts.getOrDefault(topicId, -1);
            }

            @Override
            public Set<String> racksForPartition(Uuid topicId, int partition) {
                JsonNode perPartition = racks.get(topicId);
                if (perPartition == null || partition >= perPartition.size()) {
                    return Set.of();
                }
                Set<String> out = new HashSet<>();
                for (JsonNode r : perPartition.get(partition)) {
                    if (!r.isNull()) {
                        out.add(r.asText());
                    }
                }
                return out;
            }
        };
        GroupAssignment result = assignor.assign(new GroupSpecImpl(members, type, inverted), describer);
        ObjectNode out = NODES.objectNode();
        ObjectNode assignment = out.putObject("assignment");
        ArrayNode order = NODES.arrayNode();
        for (String memberId : members.keySet()) {
            order.add(memberId);
            MemberAssignment one = result.members().get(memberId);
            List<TopicPartition> partitions = new ArrayList<>();
            if (one != null) {
                for (Map.Entry<Uuid, Set<Integer>> e : one.partitions().entrySet()) {
                    for (int p : e.getValue()) {
                        partitions.add(new TopicPartition(names.get(e.getKey()), p));
                    }
                }
            }
            partitions.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
            ArrayNode list = assignment.putArray(memberId);
            for (TopicPartition tp : partitions) {
                list.add(tp.topic() + "-" + tp.partition());
            }
        }
        out.put("subscriptionType", type.name());
        ObjectNode topicIds = out.putObject("topicIds");
        for (Map.Entry<String, Uuid> e : ids.entrySet()) {
            topicIds.put(e.getKey(), e.getValue().toString());
        }
        out.set("memberIterationOrder", order);
        return out;
    }
}
