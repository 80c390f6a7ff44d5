package kgroup.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.IntegerSerializer;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.ShortSerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Apache Kafka's own Java clients, driven from kgroup's tests: {@code KafkaConsumer} or
 * {@code KafkaProducer} of the pinned kafka-clients jar, configured from one JSON argument, printing
 * one JSON line per observable event on stdout and obeying one JSON command per line on stdin.
 *
 * <pre>
 *   java -cp kafka-libs/*:driver.jar kgroup.testing.ClientDriver consumer '{"properties": {...}, "topics": ["t"]}'
 *   java -cp kafka-libs/*:driver.jar kgroup.testing.ClientDriver producer '{"properties": {...}}'
 * </pre>
 *
 * <p>Every event has {@code "event"} and {@code "ts"} (the JVM's wall clock, ms). The consumer prints
 * {@code started}, {@code subscribed}, then from its rebalance listener {@code revoked},
 * {@code assigned} and {@code lost} (each with the partitions, the whole assignment after the
 * callback and the generation and member id of {@code consumer.groupMetadata()} at that moment),
 * one {@code record} per consumed record, {@code commit} (offsets and {@code error}, null when it
 * succeeded), {@code committed}, {@code assignment}, {@code error} (an exception thrown by
 * {@code poll()}; {@code fatal} ones stop the polling) and {@code closed}. Commands: {@code commit}
 * (the positions of every assigned partition, or {@code "offsets": [[topic, partition, offset]]}),
 * {@code commit_async}, {@code committed}, {@code assignment}, {@code pause_polling} /
 * {@code resume_polling}, {@code close} ({@code "timeout_ms"}) and {@code exit} (halt at once, no
 * close: a crash); with {@code "subscribe_on_command": true} in the configuration the consumer
 * fetches its topics' metadata (warming up the JVM and the connection) and subscribes only when told
 * {@code subscribe}; {@code subscribe} with {@code "topics"} calls {@code subscribe()} with that list
 * (also when already subscribed: the subscription changes, the group is rejoined). With {@code "acknowledge_rebalances": true} every rebalance callback, once
 * it has printed its event, waits for an {@code ack} command before it returns (60 s at most, then it
 * throws), so the test has acted on the event before the consumer goes on: before it fetches newly
 * assigned partitions, and before a revoked one can go to another member (at {@code close()}, before
 * the LeaveGroup). The producer prints {@code started}, {@code sent} per record (partition, offset)
 * or {@code send_error}, {@code flushed} after each {@code send} command, {@code txn} after each
 * {@code txn} command (a transactional producer's init, begin, send_offsets, commit, abort), and
 * {@code closed}. The {@code eos} role is one worker of an exactly-once consume-transform-produce
 * stage ({@link #runExactlyOnceStage}).
 * The end of stdin is a {@code close}: a driver whose parent died does not stay behind.
 */
public final class ClientDriver {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final PrintStream OUT =
            new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
    private static final LinkedBlockingQueue<JsonNode> COMMANDS = new LinkedBlockingQueue<>();
    /** {@code ack} commands, for the rebalance callbacks (they run inside poll() and close()) */
    private static final LinkedBlockingQueue<JsonNode> ACKS = new LinkedBlockingQueue<>();
    private static final AtomicBoolean INPUT_CLOSED = new AtomicBoolean();
    private static final long ACK_TIMEOUT_S = 60;

    private ClientDriver() {}

    public static void main(String[] args) throws Exception {
        // nothing but the events may reach stdout
        System.setOut(new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.err), true));
        if (args.length != 2
                || !(args[0].equals("consumer") || args[0].equals("producer") || args[0].equals("share")
                     || args[0].equals("eos"))) {
            System.err.println("usage: ClientDriver consumer|producer|share|eos CONFIG_JSON");
            System.exit(2);
        }
        JsonNode config = JSON.readTree(args[1]);
        startStdinReader();
        try {
            if (args[0].equals("consumer")) {
                runConsumer(config);
            } else if (args[0].equals("share")) {
                runShareConsumer(config);
            } else if (args[0].equals("eos")) {
                runExactlyOnceStage(config);
            } else {
                runProducer(config);
            }
        } catch (Throwable t) {
            emit(event("fatal", "type", t.getClass().getSimpleName(), "message", String.valueOf(t.getMessage())));
            OUT.flush();
            Runtime.getRuntime().halt(1);
        }
        OUT.flush();
        Runtime.getRuntime().halt(0);
    }

    // --- output ----------------------------------------------------------------------------------

    static Map<String, Object> event(String name, Object... pairs) {
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("event", name);
        map.put("ts", System.currentTimeMillis());
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            map.put((String) pairs[i], pairs[i + 1]);
        }
        return map;
    }

    static synchronized void emit(Map<String, Object> event) {
        try {
            OUT.print(JSON.writeValueAsString(event));
            OUT.print('\n');
            OUT.flush();
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    static Map<String, Object> errorOf(Throwable t) {
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("type", t.getClass().getSimpleName());
        map.put("message", String.valueOf(t.getMessage()));
        return map;
    }

    static List<List<Object>> partitions(Collection<TopicPartition> partitions) {
        List<TopicPartition> sorted = new ArrayList<>(partitions);
        sorted.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
        List<List<Object>> out = new ArrayList<>();
        for (TopicPartition tp : sorted) {
            out.add(List.of(tp.topic(), tp.partition()));
        }
        return out;
    }

    static List<List<Object>> offsets(Map<TopicPartition, OffsetAndMetadata> offsets) {
        List<TopicPartition> sorted = new ArrayList<>(offsets.keySet());
        sorted.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
        List<List<Object>> out = new ArrayList<>();
        for (TopicPartition tp : sorted) {
            OffsetAndMetadata om = offsets.get(tp);
            List<Object> row = new ArrayList<>();
            row.add(tp.topic());
            row.add(tp.partition());
            row.add(om == null ? null : om.offset());
            out.add(row);
        }
        return out;
    }

    // --- input -----------------------------------------------------------------------------------

    static void startStdinReader() {
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    line = line.trim();
                    if (line.isEmpty()) {
                        continue;
                    }
                    try {
                        JsonNode command = JSON.readTree(line);
                        String cmd = command.path("cmd").asText();
                        if (cmd.equals("exit")) {
                            OUT.flush();
                            Runtime.getRuntime().halt(command.path("code").asInt(0));
                        }
                        (cmd.equals("ack") ? ACKS : COMMANDS).add(command);
                    } catch (Exception e) {
                        emit(event("bad_command", "line", line, "error", errorOf(e)));
                    }
                }
            } catch (Exception e) {
                // stdin failed: treat it as its end
            }
            INPUT_CLOSED.set(true);
            ACKS.add(JSON.createObjectNode().put("cmd", "ack").put("eof", true));  // a waiting callback goes on
            COMMANDS.add(JSON.createObjectNode().put("cmd", "close").put("timeout_ms", 10000).put("eof", true));
        }, "driver-stdin");
        reader.setDaemon(true);
        reader.start();
    }

    static Properties properties(JsonNode config) {
        Properties props = new Properties();
        for (Map.Entry<String, JsonNode> field : config.path("properties").properties()) {
            props.put(field.getKey(), field.getValue().asText());
        }
        return props;
    }

    // --- consumer --------------------------------------------------------------------------------

    static boolean isFatal(Throwable t) {
        return t instanceof FencedInstanceIdException
                || t instanceof GroupAuthorizationException
                || t instanceof InvalidConfigurationException
                || t instanceof UnsupportedVersionException
                || t instanceof IllegalStateException;
    }

    static void runConsumer(JsonNode config) throws Exception {
        Properties props = properties(config);
        List<String> topics = new ArrayList<>();
        config.path("topics").forEach(t -> topics.add(t.asText()));
        long pollMs = config.path("poll_ms").asLong(100);
        KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
        boolean onCommand = config.path("subscribe_on_command").asBoolean(false);
        boolean acknowledge = config.path("acknowledge_rebalances").asBoolean(false);
        if (onCommand) {
            // warm up (class loading, the first connection, the topics' metadata), so that the time
            // from subscribe to assigned is the group's
            for (String topic : topics) {
                consumer.partitionsFor(topic, Duration.ofSeconds(30));
            }
        }
        emit(event("started", "client_id", props.getProperty("client.id")));
        ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                emit(rebalanceEvent("revoked", consumer, revoked));
                awaitAck(acknowledge, "revoked");
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                emit(rebalanceEvent("assigned", consumer, assigned));
                awaitAck(acknowledge, "assigned");
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> lost) {
                emit(rebalanceEvent("lost", consumer, lost));
                awaitAck(acknowledge, "lost");
            }
        };
        boolean subscribed = false;
        boolean polling = false;
        if (!onCommand) {
            consumer.subscribe(topics, listener);
            emit(event("subscribed", "topics", topics));
            subscribed = true;
            polling = true;
        }
        while (true) {
            // while not polling (not subscribed yet, paused, fenced) wait for the next command instead
            JsonNode command = polling ? COMMANDS.poll() : COMMANDS.poll(pollMs, TimeUnit.MILLISECONDS);
            for (; command != null; command = COMMANDS.poll()) {
                String cmd = command.path("cmd").asText();
                switch (cmd) {
                    case "close": {
                        long timeout = command.path("timeout_ms").asLong(30000);
                        try {
                            consumer.close(CloseOptions.timeout(Duration.ofMillis(timeout)));
                            emit(event("closed", "eof", command.path("eof").asBoolean(false)));
                        } catch (Exception e) {
                            emit(event("closed", "error", errorOf(e)));
                        }
                        return;
                    }
                    case "commit":
                    case "commit_async":
                        commit(consumer, command, cmd.equals("commit_async"));
                        break;
                    case "committed": {
                        Set<TopicPartition> wanted = new java.util.HashSet<>();
                        if (command.has("partitions")) {
                            command.path("partitions").forEach(p -> wanted.add(
                                    new TopicPartition(p.get(0).asText(), p.get(1).asInt())));
                        } else {
                            wanted.addAll(consumer.assignment());
                        }
                        try {
                            Map<TopicPartition, OffsetAndMetadata> committed =
                                    consumer.committed(wanted, Duration.ofMillis(command.path("timeout_ms").asLong(30000)));
                            Map<TopicPartition, OffsetAndMetadata> all = new HashMap<>();
                            for (TopicPartition tp : wanted) {
                                all.put(tp, committed.get(tp));
                            }
                            emit(event("committed", "offsets", offsets(all), "error", null));
                        } catch (Exception e) {
                            emit(event("committed", "offsets", null, "error", errorOf(e)));
                        }
                        break;
                    }
                    case "assignment": {
                        ConsumerGroupMetadata meta = consumer.groupMetadata();
                        emit(event("assignment", "assignment", partitions(consumer.assignment()),
                                "generation", meta.generationId(), "member_id", meta.memberId()));
                        break;
                    }
                    case "subscribe": {
                        // the JVM started first, the test decides when the member joins;
                        // with "topics": subscribe() again to that list (a changed subscription)
                        boolean changed = command.has("topics");
                        if (changed) {
                            topics.clear();
                            command.path("topics").forEach(t -> topics.add(t.asText()));
                        }
                        if (!subscribed || changed) {
                            consumer.subscribe(topics, listener);
                            polling = polling || !subscribed;
                            subscribed = true;
                        }
                        emit(event("subscribed", "topics", new ArrayList<>(topics)));
                        break;
                    }
                    case "pause_polling":
                        polling = false;
                        emit(event("polling", "on", false));
                        break;
                    case "resume_polling":
                        polling = subscribed;
                        emit(event("polling", "on", true));
                        break;
                    default:
                        emit(event("bad_command", "line", command.toString(), "error", null));
                }
            }
            if (!polling) {
                continue;
            }
            try {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(pollMs));
                for (ConsumerRecord<String, String> record : records) {
                    emit(event("record", "topic", record.topic(), "partition", record.partition(),
                            "offset", record.offset(), "key", record.key(), "value", record.value()));
                }
            } catch (Exception e) {
                boolean fatal = isFatal(e);
                Map<String, Object> error = event("error", "where", "poll", "fatal", fatal);
                error.putAll(errorOf(e));
                error.put("event", "error");
                emit(error);
                if (fatal) {
                    polling = false;
                } else {
                    Thread.sleep(pollMs);
                }
            }
        }
    }

    /** In the acknowledged mode: wait for the test's {@code ack} of the event just printed. */
    static void awaitAck(boolean acknowledge, String what) {
        if (!acknowledge || INPUT_CLOSED.get()) {
            return;
        }
        try {
            if (ACKS.poll(ACK_TIMEOUT_S, TimeUnit.SECONDS) == null) {
                throw new IllegalStateException("no ack for '" + what + "' within " + ACK_TIMEOUT_S + " s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static Map<String, Object> rebalanceEvent(String name, KafkaConsumer<String, String> consumer,
                                              Collection<TopicPartition> changed) {
        ConsumerGroupMetadata meta = consumer.groupMetadata();
        Set<TopicPartition> after = new java.util.HashSet<>(consumer.assignment());
        if (!name.equals("assigned")) {
            after.removeAll(changed);  // the callback runs before the partitions are taken away
        }
        return event(name, "partitions", partitions(changed), "assignment", partitions(after),
                "generation", meta.generationId(), "member_id", meta.memberId(),
                "group_instance_id", meta.groupInstanceId().orElse(null));
    }

    static void commit(KafkaConsumer<String, String> consumer, JsonNode command, boolean async) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        try {
            if (command.has("offsets")) {
                for (JsonNode row : command.path("offsets")) {
                    offsets.put(new TopicPartition(row.get(0).asText(), row.get(1).asInt()),
                            new OffsetAndMetadata(row.get(2).asLong()));
                }
            } else {
                for (TopicPartition tp : consumer.assignment()) {
                    offsets.put(tp, new OffsetAndMetadata(consumer.position(tp, Duration.ofMillis(10000))));
                }
            }
            if (async) {
                final Map<TopicPartition, OffsetAndMetadata> sent = offsets;
                consumer.commitAsync(sent, (done, exception) -> emit(event("commit", "offsets", offsets(sent),
                        "async", true, "error", exception == null ? null : errorOf(exception))));
                return;
            }
            consumer.commitSync(offsets, Duration.ofMillis(command.path("timeout_ms").asLong(30000)));
            emit(event("commit", "offsets", offsets(offsets), "async", false, "error", null));
        } catch (Exception e) {
            emit(event("commit", "offsets", offsets(offsets), "async", async, "error", errorOf(e)));
        }
    }

    // --- producer --------------------------------------------------------------------------------

    /** How a key's text becomes the key the producer's serializer takes. */
    record KeyType(Serializer<Object> serializer, Function<String, Object> parse) {
        @SuppressWarnings("unchecked")
        static KeyType of(Serializer<?> serializer, Function<String, Object> parse) {
            return new KeyType((Serializer<Object>) serializer, parse);
        }
    }

    /**
     * The key serializer {@code key.serializer} names: {@code StringSerializer} (the default), or
     * Kafka's {@code LongSerializer}, {@code IntegerSerializer} or {@code ShortSerializer} — each
     * key then arrives as its decimal text and is parsed into that type first.
     */
    static KeyType keyType(Properties props) {
        String name = props.getProperty("key.serializer", StringSerializer.class.getName());
        if (name.equals(StringSerializer.class.getName())) {
            return KeyType.of(new StringSerializer(), text -> text);
        } else if (name.equals(LongSerializer.class.getName())) {
            return KeyType.of(new LongSerializer(), Long::valueOf);
        } else if (name.equals(IntegerSerializer.class.getName())) {
            return KeyType.of(new IntegerSerializer(), Integer::valueOf);
        } else if (name.equals(ShortSerializer.class.getName())) {
            return KeyType.of(new ShortSerializer(), Short::valueOf);
        }
        throw new IllegalArgumentException("key.serializer: " + name + " is not one the driver takes "
                + "(StringSerializer, LongSerializer, IntegerSerializer, ShortSerializer)");
    }

    // --- share consumer (KIP-932) ------------------------------------------------------------------

    /**
     * {@code KafkaShareConsumer} in explicit acknowledgement mode: each polled record is printed as a
     * {@code record} event (with {@code delivery_count}) and acknowledged ACCEPT — or RELEASE when its
     * offset is in the configuration's {@code "release"} ([[topic, partition, offset], ...]) and it is
     * delivered for the first time — then {@code commitSync()} after each poll ({@code acknowledged}
     * event with its errors). With {@code "hold": true} the first records polled are printed
     * ({@code ack} HOLD) and kept unacknowledged, and polling stops ({@code holding} event). Commands:
     * {@code pause_polling} (keeps what it holds), {@code resume_polling}, {@code close}, {@code exit}.
     */
    static void runShareConsumer(JsonNode config) throws Exception {
        Properties props = properties(config);
        props.putIfAbsent("share.acknowledgement.mode", "explicit");
        List<String> topics = new ArrayList<>();
        config.path("topics").forEach(t -> topics.add(t.asText()));
        Set<String> release = new java.util.HashSet<>();
        config.path("release").forEach(r -> release.add(r.get(0).asText() + "/" + r.get(1).asInt() + "/" + r.get(2).asLong()));
        long pollMs = config.path("poll_ms").asLong(100);
        boolean hold = config.path("hold").asBoolean(false);
        org.apache.kafka.clients.consumer.KafkaShareConsumer<String, String> consumer =
                new org.apache.kafka.clients.consumer.KafkaShareConsumer<>(
                        props, new StringDeserializer(), new StringDeserializer());
        emit(event("started", "client_id", props.getProperty("client.id")));
        consumer.subscribe(topics);
        emit(event("subscribed", "topics", topics));
        boolean polling = true;
        while (true) {
            JsonNode command = polling ? COMMANDS.poll() : COMMANDS.poll(pollMs, TimeUnit.MILLISECONDS);
            for (; command != null; command = COMMANDS.poll()) {
                String cmd = command.path("cmd").asText();
                if (cmd.equals("close")) {
                    try {
                        consumer.close(Duration.ofMillis(command.path("timeout_ms").asLong(30000)));
                        emit(event("closed", "eof", command.path("eof").asBoolean(false)));
                    } catch (Exception e) {
                        emit(event("closed", "error", errorOf(e)));
                    }
                    return;
                } else if (cmd.equals("pause_polling")) {
                    polling = false;
                    emit(event("polling", "on", false));
                } else if (cmd.equals("resume_polling")) {
                    polling = true;
                    emit(event("polling", "on", true));
                } else {
                    emit(event("bad_command", "line", command.toString()));
                }
            }
            if (!polling) {
                continue;
            }
            ConsumerRecords<String, String> records;
            try {
                records = consumer.poll(Duration.ofMillis(pollMs));
            } catch (Exception e) {
                Map<String, Object> error = errorOf(e);
                error.put("event", "error");
                error.put("ts", System.currentTimeMillis());
                error.put("fatal", isFatal(e));
                emit(error);
                if (isFatal(e)) {
                    polling = false;
                }
                continue;
            }
            if (records.isEmpty()) {
                continue;
            }
            if (hold) {
                // keep the first records polled acquired, unacknowledged, and stop polling
                for (ConsumerRecord<String, String> record : records) {
                    emit(event("record", "topic", record.topic(), "partition", record.partition(),
                            "offset", record.offset(), "key", record.key(), "value", record.value(),
                            "delivery_count", record.deliveryCount().map(Short::intValue).orElse(-1), "ack", "HOLD"));
                }
                polling = false;
                emit(event("holding", "count", records.count()));
                continue;
            }
            for (ConsumerRecord<String, String> record : records) {
                int count = record.deliveryCount().map(Short::intValue).orElse(-1);
                boolean releaseIt = count == 1
                        && release.contains(record.topic() + "/" + record.partition() + "/" + record.offset());
                emit(event("record", "topic", record.topic(), "partition", record.partition(),
                        "offset", record.offset(), "key", record.key(), "value", record.value(),
                        "delivery_count", count, "ack", releaseIt ? "RELEASE" : "ACCEPT"));
                consumer.acknowledge(record, releaseIt
                        ? org.apache.kafka.clients.consumer.AcknowledgeType.RELEASE
                        : org.apache.kafka.clients.consumer.AcknowledgeType.ACCEPT);
            }
            try {
                Map<org.apache.kafka.common.TopicIdPartition, java.util.Optional<org.apache.kafka.common.KafkaException>> result =
                        consumer.commitSync(Duration.ofSeconds(30));
                List<String> failed = new ArrayList<>();
                result.forEach((tp, error) -> error.ifPresent(e -> failed.add(tp + ": " + e)));
                emit(event("acknowledged", "count", records.count(), "errors", failed));
            } catch (Exception e) {
                emit(event("acknowledged", "count", records.count(), "errors", List.of(String.valueOf(e))));
            }
        }
    }

    static void runProducer(JsonNode config) throws Exception {
        Properties props = properties(config);
        KeyType keyType = keyType(props);
        KafkaProducer<Object, String> producer =
                new KafkaProducer<>(props, keyType.serializer(), new StringSerializer());
        emit(event("started"));
        String defaultTopic = config.path("topic").asText(null);
        while (true) {
            JsonNode command = COMMANDS.take();
            String cmd = command.path("cmd").asText();
            if (cmd.equals("close")) {
                try {
                    producer.close(Duration.ofMillis(command.path("timeout_ms").asLong(30000)));
                    emit(event("closed", "eof", command.path("eof").asBoolean(false)));
                } catch (Exception e) {
                    emit(event("closed", "error", errorOf(e)));
                }
                return;
            }
            if (cmd.equals("txn")) {
                transaction(producer, command);
                continue;
            }
            if (!cmd.equals("send")) {
                emit(event("bad_command", "line", command.toString(), "error", null));
                continue;
            }
            AtomicInteger failed = new AtomicInteger();
            int count = 0;
            for (JsonNode record : command.path("records")) {
                String topic = record.path("topic").asText(defaultTopic);
                String key = record.path("key").isNull() || record.path("key").isMissingNode()
                        ? null : record.path("key").asText();
                String value = record.path("value").isNull() || record.path("value").isMissingNode()
                        ? null : record.path("value").asText();
                Integer partition = record.path("partition").isInt() ? record.path("partition").asInt() : null;
                count++;
                try {
                    Object typedKey = key == null ? null : keyType.parse().apply(key);
                    producer.send(new ProducerRecord<>(topic, partition, typedKey, value),
                            (RecordMetadata meta, Exception exception) -> {
                                if (exception == null) {
                                    emit(event("sent", "topic", meta.topic(), "partition", meta.partition(),
                                            "offset", meta.offset(), "key", key));
                                } else {
                                    failed.incrementAndGet();
                                    Map<String, Object> error = event("send_error", "topic", topic, "key", key);
                                    error.put("error", errorOf(exception));
                                    emit(error);
                                }
                            });
                } catch (Exception e) {
                    failed.incrementAndGet();
                    emit(event("send_error", "topic", topic, "key", key, "error", errorOf(e)));
                }
            }
            producer.flush();
            emit(event("flushed", "count", count, "failed", failed.get()));
        }
    }

    /**
     * A transactional producer's step: {@code "op"} is {@code init}, {@code begin}, {@code commit},
     * {@code abort} or {@code send_offsets} ({@code "offsets": [[topic, partition, offset]]} with the
     * group's {@code "group"}, {@code "generation"}, {@code "member_id"} and {@code "instance_id"}, a
     * {@code ConsumerGroupMetadata}); prints {@code txn} with the op and its {@code error} (null when it
     * succeeded).
     */
    static void transaction(KafkaProducer<Object, String> producer, JsonNode command) {
        String op = command.path("op").asText();
        try {
            switch (op) {
                case "init" -> producer.initTransactions();
                case "begin" -> producer.beginTransaction();
                case "commit" -> producer.commitTransaction();
                case "abort" -> producer.abortTransaction();
                case "send_offsets" -> {
                    Map<org.apache.kafka.common.TopicPartition,
                            org.apache.kafka.clients.consumer.OffsetAndMetadata> offsets = new LinkedHashMap<>();
                    for (JsonNode row : command.path("offsets")) {
                        offsets.put(new org.apache.kafka.common.TopicPartition(row.get(0).asText(), row.get(1).asInt()),
                                new org.apache.kafka.clients.consumer.OffsetAndMetadata(row.get(2).asLong()));
                    }
                    String instance = command.path("instance_id").isTextual()
                            ? command.path("instance_id").asText() : null;
                    producer.sendOffsetsToTransaction(offsets,
                            new org.apache.kafka.clients.consumer.ConsumerGroupMetadata(
                                    command.path("group").asText(), command.path("generation").asInt(-1),
                                    command.path("member_id").asText(""), java.util.Optional.ofNullable(instance)));
                }
                default -> {
                    emit(event("bad_command", "line", command.toString(), "error", null));
                    return;
                }
            }
            emit(event("txn", "op", op, "error", null));
        } catch (Exception e) {
            emit(event("txn", "op", op, "error", errorOf(e)));
        }
    }

    // --- exactly-once stage ----------------------------------------------------------------------

    /**
     * One worker of an exactly-once consume-transform-produce stage: a {@code KafkaConsumer}
     * ({@code "consumer"} properties, {@code read_committed}, no auto commit) subscribed to
     * {@code "input"} and a transactional {@code KafkaProducer} ({@code "producer"} properties with
     * its {@code transactional.id}). Each non-empty poll is one transaction: every record sent to
     * {@code "output"} (same partition and key, {@code "suffix"} appended to the value), the offsets
     * after the batch sent with {@code consumer.groupMetadata()} ({@code sendOffsetsToTransaction}),
     * committed. A transaction that fails is aborted and the consumer rewound to its committed
     * offsets. Prints {@code started} (after {@code initTransactions}), {@code assigned} /
     * {@code revoked} / {@code lost}, {@code committed} (the records of a committed transaction),
     * {@code aborted} (the error), {@code fatal} (a fenced producer or instance: the worker stops)
     * and {@code closed}. Commands: {@code close} (after the transaction in progress) and
     * {@code exit} (halt at once: a crash, its transaction left open).
     */
    static void runExactlyOnceStage(JsonNode config) throws Exception {
        Properties consumerProps = new Properties();
        config.path("consumer").properties().forEach(f -> consumerProps.put(f.getKey(), f.getValue().asText()));
        consumerProps.putIfAbsent("isolation.level", "read_committed");
        consumerProps.putIfAbsent("enable.auto.commit", "false");
        consumerProps.putIfAbsent("auto.offset.reset", "earliest");
        Properties producerProps = new Properties();
        config.path("producer").properties().forEach(f -> producerProps.put(f.getKey(), f.getValue().asText()));
        String input = config.path("input").asText();
        String output = config.path("output").asText();
        String suffix = config.path("suffix").asText("");
        long pollMs = config.path("poll_ms").asLong(100);
        KafkaProducer<String, String> producer =
                new KafkaProducer<>(producerProps, new StringSerializer(), new StringSerializer());
        KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(consumerProps, new StringDeserializer(), new StringDeserializer());
        producer.initTransactions();
        consumer.subscribe(List.of(input), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                emit(rebalanceEvent("revoked", consumer, revoked));
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                emit(rebalanceEvent("assigned", consumer, assigned));
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> lost) {
                emit(rebalanceEvent("lost", consumer, lost));
            }
        });
        emit(event("started", "transactional_id", producerProps.getProperty("transactional.id")));
        while (true) {
            JsonNode command = COMMANDS.poll();
            if (command != null && command.path("cmd").asText().equals("close")) {
                long timeout = command.path("timeout_ms").asLong(30000);
                try {
                    consumer.close(CloseOptions.timeout(Duration.ofMillis(timeout)));
                    producer.close(Duration.ofMillis(timeout));
                    emit(event("closed", "eof", command.path("eof").asBoolean(false)));
                } catch (Exception e) {
                    emit(event("closed", "error", errorOf(e)));
                }
                return;
            }
            boolean open = false;
            try {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(pollMs));
                if (records.isEmpty()) {
                    continue;
                }
                producer.beginTransaction();
                open = true;
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> record : records) {
                    producer.send(new ProducerRecord<>(output, record.partition(), record.key(), record.value() + suffix));
                    offsets.put(new TopicPartition(record.topic(), record.partition()),
                            new OffsetAndMetadata(record.offset() + 1));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
                emit(event("committed", "count", records.count(), "offsets", offsets(offsets)));
            } catch (org.apache.kafka.common.errors.ProducerFencedException
                     | org.apache.kafka.common.errors.InvalidProducerEpochException
                     | FencedInstanceIdException e) {
                Map<String, Object> fatal = event("fatal", "where", "stage");
                fatal.putAll(errorOf(e));
                emit(fatal);
                return;
            } catch (Exception e) {
                if (isFatal(e) || e instanceof org.apache.kafka.common.errors.InvalidSessionTimeoutException) {
                    Map<String, Object> fatal = event("fatal", "where", "stage");  // it would fail again
                    fatal.putAll(errorOf(e));
                    emit(fatal);
                    return;
                }
                Map<String, Object> aborted = event("aborted", "open", open);
                aborted.putAll(errorOf(e));
                emit(aborted);
                if (open) {
                    producer.abortTransaction();
                }
                rewind(consumer);
            }
        }
    }

    /** Back to the committed offsets of every assigned partition (its start when it has none). */
    static void rewind(KafkaConsumer<String, String> consumer) {
        Set<TopicPartition> assigned = consumer.assignment();
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assigned, Duration.ofSeconds(30));
        List<TopicPartition> fromStart = new ArrayList<>();
        for (TopicPartition tp : assigned) {
            OffsetAndMetadata at = committed.get(tp);
            if (at == null) {
                fromStart.add(tp);
            } else {
                consumer.seek(tp, at.offset());
            }
        }
        if (!fromStart.isEmpty()) {
            consumer.seekToBeginning(fromStart);
        }
    }
}
