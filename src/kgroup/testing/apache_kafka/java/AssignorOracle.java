// kgroup's oracle: Apache Kafka's own code, asked over stdin/stdout (driven by kgroup.testing.apache_kafka.oracle).
//
// One JVM serves many requests. Each request is ONE line of JSON on stdin:
//     {"op": "<op>", "batch": [<item>, ...]}
// and is answered by ONE line on stdout:
//     {"results": [<result or {"error": "..."}>, ...]}     (same length, same order)
// or {"fatal": "..."} when the line itself cannot be read. The first line the JVM writes is
// {"ready": "<Kafka version>"}. Everything else Kafka or the JVM print goes to stderr: stdout is the
// protocol's alone.
//
// Ops (the consumer-side items are the "input" objects of tests/vectors/FORMAT.md):
//   assign         {"assignor": "range"|"roundrobin"|"sticky"|"cooperative-sticky", "input": {...}}
//                  -> {"assignment": {...}, "memberIterationOrder": [...]} | {"error": "<Java exception>: ..."}
//                  through the public entry point assign(Cluster, GroupSubscription), as ConsumerCoordinator does
//   murmur2        {"keyHex": "...", "numPartitions": [...]} -> {"murmur2", "toPositive", "partitions"}
//   rr-partitioner {"numPartitions": N, "availablePartitions": [...], "calls": K} -> {"partitions": [...]}
//   server-assign  {"assignor": "uniform"|"range", "topics": [...], "members": [...], ...}
//                  -> {"memberIds", "subscriptionType", "assignment" | "error", "nanos"}
//                  the KIP-848 coordinator's assignors on a GroupSpecImpl built as TargetAssignmentBuilder
//                  builds it (ServerAssignors.java says how, and the item's fields)
//   produce        {"bootstrap": "...", "topic": "...", "records": N, "partitioner": "<class>"|null,
//                   "batchSize": B, "keyHex": "..."|null} -> {"partitions": [...], "metadataOrder": [...]}
//                  a real KafkaProducer sends N records one at a time (each waits for its ack) to a live
//                  cluster; the answer is the partition each record went to (RecordMetadata.partition)
//                  and the order in which the producer's metadata lists the topic's partitions
//   has-class      {"name": "..."} -> {"present": true|false}
//   striped-place  {"seed": S, "brokers": [{"id", "rack", "fenced"}], "topics": [{"partitions", "replicationFactor"}]}
//                  -> {"usable": [...], "topics": [{"assignment": [[...], ...]} | {"error": "..."}]}
//                  a KRaft controller's StripedReplicaPlacer with java.util.Random(S), the brokers as its
//                  BrokerHeartbeatManager lists them (ReplicaPlacement.java)
//   client-partition-order  {"updates": [{"partial", "topics": [{"name", "partitions", "leaderless"}]}],
//                  "topics": [...]} -> {"all": {...}, "available": {...}}: the order in which a producer's
//                  Cluster lists partitions after those Metadata answers (ClientMetadata.java)
//   record-bytes   {"type": 3, "key": {...}, "value": {...}|null} -> {"key": "<hex>", "value": "<hex>"|null}
//   record-read    {"key": "<hex>", "value": "<hex>"|null} -> {"type", "key", "value", "valueVersion"}
//                  the coordinator's __consumer_offsets records through GroupCoordinatorRecordSerde, built
//                  from and answered as the JSON of Kafka's generated converters (CoordinatorRecords.java)
//   txn-record-bytes, txn-add-partitions-bytes, txn-record-read, txn-metadata-steps
//                  the transaction coordinator's __transaction_state records through Kafka's TransactionLog
//                  and TransactionMetadata (TransactionRecords.java)
//   topic-regex    {"pattern": "...", "topics": [...]} -> {"matches": [...]} | {"invalid": "<message>"}
//                  | {"overflow": true}: the group coordinator's regex validation and RE2/J's matching
//                  (TopicRegexes.java)
//
// Written for kgroup; it calls Kafka's classes, it copies none of their code.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupAssignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractPartitionAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor;
import org.apache.kafka.clients.producer.RoundRobinPartitioner;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.Struct;
import org.apache.kafka.common.utils.Utils;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

public final class AssignorOracle {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final Comparator<TopicPartition> PARTITION_ORDER =
        Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);

    private AssignorOracle() {
    }

    public static void main(String[] args) throws Exception {
        // the protocol owns the real stdout; whatever else prints (log4j's default console) goes to stderr
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        ObjectNode hello = NODES.objectNode();
        hello.put("ready", kafkaVersion());
        out.println(JSON.writeValueAsString(hello));
        out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode reply = NODES.objectNode();
            try {
                JsonNode request = JSON.readTree(line);
                String op = request.path("op").asText("");
                ArrayNode results = reply.putArray("results");
                for (JsonNode item : request.path("batch")) {
                    results.add(answer(op, item));
                }
            } catch (Exception e) {
                reply = NODES.objectNode();
                reply.put("fatal", describe(e));
            }
            out.println(JSON.writeValueAsString(reply));
            out.flush();
        }
    }

    /** Kafka's own version string (AppInfoParser moved to an internals package in Kafka 4.1). */
    private static String kafkaVersion() {
        for (String name : List.of("org.apache.kafka.common.utils.internals.AppInfoParser", "org.apache.kafka.common.utils.AppInfoParser")) {
            try {
                return (String) Class.forName(name).getMethod("getVersion").invoke(null);
            } catch (ReflectiveOperationException e) {
                // try the next place
            }
        }
        return "unknown";
    }

    private static JsonNode answer(String op, JsonNode item) {
        try {
            switch (op) {
                case "assign":
                    return assign(item.path("assignor").asText(), item.path("input"));
                case "murmur2":
                    return murmur2(item);
                case "rr-partitioner":
                    return roundRobinPartitioner(item);
                case "server-assign":
                    return ServerAssignors.assign(item);
                case "produce":
                    return produce(item);
                case "has-class":
                    return hasClass(item.path("name").asText());
                case "striped-place":
                    return ReplicaPlacement.place(item);
                case "client-partition-order":
                    return ClientMetadata.order(item);
                case "scala-map-order":
                    return ScalaMaps.order(item);
                case "scala-set-order":
                    return ScalaMaps.setOrder(item);
                case "record-bytes":
                    return CoordinatorRecords.bytes(item);
                case "record-read":
                    return CoordinatorRecords.read(item);
                case "topic-regex":
                    return TopicRegexes.answer(item);
                case "txn-record-bytes":
                    return TransactionRecords.bytes(item);
                case "txn-add-partitions-bytes":
                    return TransactionRecords.addPartitionsBytes(item);
                case "txn-record-read":
                    return TransactionRecords.read(item);
                case "txn-metadata-steps":
                    return TransactionRecords.metadataSteps(item);
                default:
                    throw new IllegalArgumentException("unknown op '" + op + "'");
            }
        } catch (Throwable e) {
            ObjectNode error = NODES.objectNode();
            error.put("error", describe(e));
            return error;
        }
    }

    static String describe(Throwable e) {
        Throwable cause = e;
        while (cause instanceof java.lang.reflect.InvocationTargetException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        String message = cause.getMessage();
        return cause.getClass().getSimpleName() + ": " + (message == null ? "" : message.replace('\n', ' '));
    }

    // --- consumer assignors ---------------------------------------------------------------------

    private static JsonNode assign(String name, JsonNode input) throws Exception {
        AbstractPartitionAssignor assignor;
        switch (name) {
            case "range":
                assignor = new RangeAssignor();
                break;
            case "roundrobin":
                assignor = new RoundRobinAssignor();
                break;
            case "sticky":
                assignor = new StickyAssignor();
                break;
            case "cooperative-sticky":
                assignor = new CooperativeStickyAssignor();
                break;
            default:
                throw new IllegalArgumentException("unknown assignor '" + name + "'");
        }
        if (input.path("preferRackAwareLogic").asBoolean(false)) {
            setField(AbstractPartitionAssignor.class, assignor, "preferRackAwareLogic", true);
        }
        if (input.hasNonNull("priorMaxGeneration") && assignor instanceof AbstractStickyAssignor) {
            setField(AbstractStickyAssignor.class, assignor, "maxGeneration", input.get("priorMaxGeneration").asInt());
        }
        Cluster cluster = cluster(input.path("topics"));
        // ConsumerCoordinator.onLeaderElected puts the members into a fresh HashMap in JoinGroup order
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (JsonNode member : input.path("members")) {
            subscriptions.put(member.path("memberId").asText(), subscription(name, member));
        }
        ObjectNode result = NODES.objectNode();
        ArrayNode order = NODES.arrayNode();
        for (String memberId : subscriptions.keySet()) {
            order.add(memberId);
        }
        GroupAssignment assignment = assignor.assign(cluster, new GroupSubscription(subscriptions));
        ObjectNode members = result.putObject("assignment");
        for (String memberId : subscriptions.keySet()) {
            ConsumerPartitionAssignor.Assignment one = assignment.groupAssignment().get(memberId);
            List<TopicPartition> partitions = new ArrayList<>(one == null ? List.of() : one.partitions());
            partitions.sort(PARTITION_ORDER);
            ArrayNode list = members.putArray(memberId);
            for (TopicPartition tp : partitions) {
                list.add(tp.topic() + "-" + tp.partition());
            }
        }
        result.set("memberIterationOrder", order);
        return result;
    }

    /** One broker per distinct rack plus one rack-less broker; each partition's replicas on its racks. */
    static Cluster cluster(JsonNode topics) {
        Node rackless = new Node(0, "localhost", 9092);
        Map<String, Node> byRack = new LinkedHashMap<>();
        List<PartitionInfo> partitions = new ArrayList<>();
        for (JsonNode topic : topics) {
            String name = topic.path("name").asText();
            int count = topic.path("partitions").asInt();
            JsonNode racks = topic.get("racks");
            for (int p = 0; p < count; p++) {
                List<Node> replicas = new ArrayList<>();
                if (racks != null && !racks.isNull()) {
                    for (JsonNode rack : racks.get(p)) {
                        if (rack.isNull()) {
                            replicas.add(rackless);
                        } else {
                            String r = rack.asText();
                            replicas.add(byRack.computeIfAbsent(r, k -> new Node(byRack.size() + 1, "localhost", 9093 + byRack.size(), k)));
                        }
                    }
                }
                if (replicas.isEmpty()) {
                    replicas.add(rackless);
                }
                Node[] nodes = replicas.toArray(new Node[0]);
                partitions.add(new PartitionInfo(name, p, nodes[0], nodes, nodes));
            }
        }
        List<Node> nodes = new ArrayList<>();
        nodes.add(rackless);
        nodes.addAll(byRack.values());
        return new Cluster("kgroup-oracle", nodes, partitions, Collections.emptySet(), Collections.emptySet());
    }

    private static Subscription subscription(String assignor, JsonNode member) throws Exception {
        List<String> topics = new ArrayList<>();
        for (JsonNode t : member.path("topics")) {
            topics.add(t.asText());
        }
        List<TopicPartition> owned = partitionList(member.path("owned"));
        int generation = member.hasNonNull("generation") ? member.get("generation").asInt() : AbstractStickyAssignor.DEFAULT_GENERATION;
        Optional<String> rack = member.hasNonNull("rackId") ? Optional.of(member.get("rackId").asText()) : Optional.empty();
        ByteBuffer userData = userData(assignor, member, owned, generation);
        Subscription subscription = new Subscription(topics, userData, owned, generation, rack);
        if (member.hasNonNull("groupInstanceId")) {
            subscription.setGroupInstanceId(Optional.of(member.get("groupInstanceId").asText()));
        }
        return subscription;
    }

    static List<TopicPartition> partitionList(JsonNode strings) {
        List<TopicPartition> out = new ArrayList<>();
        for (JsonNode s : strings) {
            String text = s.asText();
            int dash = text.lastIndexOf('-');
            out.add(new TopicPartition(text.substring(0, dash), Integer.parseInt(text.substring(dash + 1))));
        }
        return out;
    }

    /** The user data a client of this assignor sends (FORMAT.md's defaults), built by the assignor's own code. */
    private static ByteBuffer userData(String assignor, JsonNode member, List<TopicPartition> owned, int generation) throws Exception {
        boolean explicit = member.has("userData");
        JsonNode raw = member.get("userData");
        if (assignor.equals("sticky")) {
            if (explicit && raw.isNull()) {
                return null;
            }
            if (!explicit) {
                if (owned.isEmpty() && generation == AbstractStickyAssignor.DEFAULT_GENERATION) {
                    return null;
                }
                return stickyV1(owned, generation);
            }
            List<TopicPartition> partitions = partitionList(raw.path("partitions"));
            if (raw.hasNonNull("generation")) {
                return stickyV1(partitions, raw.get("generation").asInt());
            }
            return stickyV0(partitions);
        }
        if (assignor.equals("cooperative-sticky")) {
            if (explicit && raw.isNull()) {
                return null;
            }
            int g = explicit ? (raw.hasNonNull("generation") ? raw.get("generation").asInt() : AbstractStickyAssignor.DEFAULT_GENERATION) : generation;
            CooperativeStickyAssignor scratch = new CooperativeStickyAssignor();
            setField(CooperativeStickyAssignor.class, scratch, "generation", g);
            return scratch.subscriptionUserData(Set.of());
        }
        return null;
    }

    /** StickyAssignor's own V1 serializer (what StickyAssignor.subscriptionUserData sends). */
    private static ByteBuffer stickyV1(List<TopicPartition> partitions, int generation) throws Exception {
        Constructor<AbstractStickyAssignor.MemberData> make =
            AbstractStickyAssignor.MemberData.class.getConstructor(List.class, Optional.class);
        Method serialize = StickyAssignor.class.getDeclaredMethod("serializeTopicPartitionAssignment", AbstractStickyAssignor.MemberData.class);
        serialize.setAccessible(true);
        return (ByteBuffer) serialize.invoke(null, make.newInstance(partitions, Optional.of(generation)));
    }

    /** The V0 schema (no generation; clients before KIP-341), written with StickyAssignor's own schemas. */
    private static ByteBuffer stickyV0(List<TopicPartition> partitions) throws Exception {
        Schema v0 = (Schema) staticField(StickyAssignor.class, "STICKY_ASSIGNOR_USER_DATA_V0");
        Schema topicAssignment = (Schema) staticField(StickyAssignor.class, "TOPIC_ASSIGNMENT");
        Map<String, List<Integer>> byTopic = new HashMap<>();
        for (TopicPartition tp : partitions) {
            byTopic.computeIfAbsent(tp.topic(), k -> new ArrayList<>()).add(tp.partition());
        }
        List<Struct> topics = new ArrayList<>();
        for (Map.Entry<String, List<Integer>> e : byTopic.entrySet()) {
            Struct t = new Struct(topicAssignment);
            t.set((String) staticField(StickyAssignor.class, "TOPIC_KEY_NAME"), e.getKey());
            t.set((String) staticField(StickyAssignor.class, "PARTITIONS_KEY_NAME"), e.getValue().toArray());
            topics.add(t);
        }
        Struct struct = new Struct(v0);
        struct.set((String) staticField(StickyAssignor.class, "TOPIC_PARTITIONS_KEY_NAME"), topics.toArray());
        ByteBuffer buffer = ByteBuffer.allocate(v0.sizeOf(struct));
        v0.write(buffer, struct);
        buffer.flip();
        return buffer;
    }

    static void setField(Class<?> owner, Object target, String name, Object value) throws Exception {
        Field field = owner.getDeclaredField(name);
        field.setAccessible(true);
        field.set(target, value);
    }

    private static Object staticField(Class<?> owner, String name) throws Exception {
        Field field = owner.getDeclaredField(name);
        field.setAccessible(true);
        return field.get(null);
    }

    // --- partitioning ---------------------------------------------------------------------------

    private static JsonNode murmur2(JsonNode item) {
        byte[] key = hex(item.path("keyHex").asText());
        ObjectNode result = NODES.objectNode();
        int hash = Utils.murmur2(key);
        result.put("murmur2", hash);
        result.put("toPositive", Utils.toPositive(hash));
        ObjectNode partitions = result.putObject("partitions");
        for (JsonNode n : item.path("numPartitions")) {
            partitions.put(Integer.toString(n.asInt()), BuiltInPartitioner.partitionForKey(key, n.asInt()));
        }
        return result;
    }

    private static byte[] hex(String text) {
        byte[] out = new byte[text.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(text.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    private static JsonNode roundRobinPartitioner(JsonNode item) {
        int n = item.path("numPartitions").asInt();
        Set<Integer> available = new HashSet<>();
        for (JsonNode p : item.path("availablePartitions")) {
            available.add(p.asInt());
        }
        Node leader = new Node(0, "localhost", 9092);
        Node[] replicas = {leader};
        List<PartitionInfo> partitions = new ArrayList<>();
        for (int p = 0; p < n; p++) {
            partitions.add(new PartitionInfo("t", p, available.contains(p) ? leader : null, replicas, replicas));
        }
        Cluster cluster = new Cluster("kgroup-oracle", List.of(leader), partitions, Set.of(), Set.of());
        ObjectNode result = NODES.objectNode();
        ArrayNode out = result.putArray("partitions");
        try (RoundRobinPartitioner partitioner = new RoundRobinPartitioner()) {
            int calls = item.path("calls").asInt();
            for (int i = 0; i < calls; i++) {
                out.add(partitioner.partition("t", null, null, null, null, cluster));
            }
        }
        return result;
    }

    private static JsonNode produce(JsonNode item) throws Exception {
        java.util.Properties props = new java.util.Properties();
        props.put("bootstrap.servers", item.path("bootstrap").asText());
        props.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        props.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        props.put("batch.size", Integer.toString(item.path("batchSize").asInt(16384)));
        props.put("linger.ms", "0");
        props.put("acks", "1");
        props.put("max.block.ms", "30000");
        props.put("request.timeout.ms", "15000");
        props.put("delivery.timeout.ms", "30000");
        if (item.hasNonNull("partitioner")) {
            props.put("partitioner.class", item.get("partitioner").asText());
        }
        String topic = item.path("topic").asText();
        byte[] key = item.hasNonNull("keyHex") ? hex(item.get("keyHex").asText()) : null;
        ObjectNode result = NODES.objectNode();
        ArrayNode out = result.putArray("partitions");
        try (org.apache.kafka.clients.producer.KafkaProducer<byte[], byte[]> producer =
                 new org.apache.kafka.clients.producer.KafkaProducer<>(props)) {
            int records = item.path("records").asInt();
            for (int i = 0; i < records; i++) {
                byte[] value = ("v" + i).getBytes(StandardCharsets.UTF_8);
                org.apache.kafka.clients.producer.RecordMetadata sent = producer
                    .send(new org.apache.kafka.clients.producer.ProducerRecord<>(topic, key, value))
                    .get(30, java.util.concurrent.TimeUnit.SECONDS);
                out.add(sent.partition());
            }
            ArrayNode order = result.putArray("metadataOrder");
            for (PartitionInfo info : producer.partitionsFor(topic)) {
                order.add(info.partition());
            }
        }
        return result;
    }

    private static JsonNode hasClass(String name) {
        ObjectNode result = NODES.objectNode();
        boolean present;
        try {
            Class.forName(name, false, AssignorOracle.class.getClassLoader());
            present = true;
        } catch (ClassNotFoundException e) {
            present = false;
        }
        result.put("present", present);
        return result;
    }
}
