// The order in which Kafka's Java producer lists a topic's partitions, the "client-partition-order" op of
// kgroup's oracle (AssignorOracle.java).
//
// A producer keeps its metadata in a ProducerMetadata: each Metadata answer is merged into a
// MetadataSnapshot, whose Cluster lists partitions in the order of the snapshot's HashMap<TopicPartition,
// ...> (not the broker's order). RoundRobinPartitioner and the built-in partitioner walk that list
// (Cluster.availablePartitionsForTopic). Here a fresh ProducerMetadata is given the answers in turn
// (each topic add()ed first, as a send does), through the client's own update path.
//
// Item:   {"updates": [{"partial": true, "topics": [{"name": "t", "partitions": [0, 1, 2, 3],
//                                                     "leaderless": [2]}]}, ...],
//          "topics": ["t", ...]}
//         ("partitions": the partitions in the order the broker's answer lists them; "partial": an answer
//          to a request for some topics, as a producer's first request for a new topic is)
// Result: {"all": {"t": [...]}, "available": {"t": [...]}}   (Cluster.partitionsForTopic and
//                                                              availablePartitionsForTopic, in order)
//
// Written for kgroup; it calls Kafka's classes, it copies none of their code.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.producer.internals.ProducerMetadata;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.internals.ClusterResourceListeners;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.MetadataResponse;
import org.apache.kafka.common.utils.internals.LogContext;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

final class ClientMetadata {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private ClientMetadata() {
    }

    static JsonNode order(JsonNode item) {
        long now = 1_000L;
        Map<String, Uuid> ids = new HashMap<>();  // one id per topic name, distinct
        try (ProducerMetadata metadata = new ProducerMetadata(
                100L, 1_000L, 300_000L, 300_000L, new LogContext(), new ClusterResourceListeners())) {
            for (JsonNode update : item.path("updates")) {
                MetadataResponseData data = new MetadataResponseData()
                    .setClusterId("kgroup-oracle")
                    .setControllerId(0);
                data.brokers().add(new MetadataResponseData.MetadataResponseBroker()
                    .setNodeId(0).setHost("localhost").setPort(9092));
                for (JsonNode topic : update.path("topics")) {
                    String name = topic.path("name").asText();
                    metadata.add(name, now);
                    Set<Integer> leaderless = new HashSet<>();
                    for (JsonNode p : topic.path("leaderless")) {
                        leaderless.add(p.asInt());
                    }
                    MetadataResponseData.MetadataResponseTopic entry = new MetadataResponseData.MetadataResponseTopic()
                        .setName(name)
                        .setTopicId(ids.computeIfAbsent(name, n -> new Uuid(1L, ids.size() + 1L)))
                        .setErrorCode(Errors.NONE.code());
                    for (JsonNode p : topic.path("partitions")) {
                        boolean led = !leaderless.contains(p.asInt());
                        entry.partitions().add(new MetadataResponseData.MetadataResponsePartition()
                            .setPartitionIndex(p.asInt())
                            .setErrorCode(led ? Errors.NONE.code() : Errors.LEADER_NOT_AVAILABLE.code())
                            .setLeaderId(led ? 0 : -1)
                            .setLeaderEpoch(0)
                            .setReplicaNodes(List.of(0))
                            .setIsrNodes(List.of(0))
                            .setOfflineReplicas(List.of()));
                    }
                    data.topics().add(entry);
                }
                metadata.updateWithCurrentRequestVersion(
                    new MetadataResponse(data, (short) 12), update.path("partial").asBoolean(true), now);
                now += 1;
            }
            Cluster cluster = metadata.fetch();
            ObjectNode result = NODES.objectNode();
            ObjectNode all = result.putObject("all");
            ObjectNode available = result.putObject("available");
            for (JsonNode name : item.path("topics")) {
                ArrayNode listed = all.putArray(name.asText());
                for (PartitionInfo info : cluster.partitionsForTopic(name.asText())) {
                    listed.add(info.partition());
                }
                ArrayNode led = available.putArray(name.asText());
                for (PartitionInfo info : cluster.availablePartitionsForTopic(name.asText())) {
                    led.add(info.partition());
                }
            }
            return result;
        }
    }
}
