import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * One stage of kgroup's group ETL benchmark (benchmarks/bench_etl_chain.py) with Kafka's own Java
 * clients: the same stage its librdkafka members run, in one JVM.
 *
 * <pre>EtlStage BOOTSTRAP GROUP KIND SOURCE SINK RECORDS MEMBERS TIMEOUT_S</pre>
 *
 * KIND is range, cooperative-sticky, static (classic range, group.instance.id per slot),
 * consumer-range or consumer-uniform (KIP-848, the server assignor). Prints "ready" once the JVM is
 * up, waits for "go" on stdin, then runs MEMBERS members at once: each polls (500 records at most),
 * produces every record onward (same key and value; the Java producer's default partitioner,
 * idempotent, linger.ms=5), flushes, commits synchronously, and leaves after its share
 * (RECORDS / (2 x MEMBERS)) for a new member in its slot. The stage ends when every source record
 * (partition, offset) has been handled and committed. Prints one line: "done ELAPSED_S MEMBERS
 * REFUSED_COMMITS" or "error MESSAGE".
 */
public final class EtlStage {
    private static final int BATCH = 500;

    private final String bootstrap;
    private final String group;
    private final String kind;
    private final String source;
    private final String sink;
    private final int records;
    private final int quota;
    private final Set<Long> done = ConcurrentHashMap.newKeySet();
    private final AtomicInteger refusedCommits = new AtomicInteger();
    private final ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();

    private EtlStage(String[] args) {
        bootstrap = args[0];
        group = args[1];
        kind = args[2];
        source = args[3];
        sink = args[4];
        records = Integer.parseInt(args[5]);
        quota = Math.max(1, records / (2 * Integer.parseInt(args[6])));
    }

    private boolean finished() {
        return done.size() >= records;
    }

    private Properties consumerConfig(int slot) {
        Properties config = new Properties();
        config.put("bootstrap.servers", bootstrap);
        config.put("group.id", group);
        config.put("client.id", group + "-" + slot);
        config.put("enable.auto.commit", "false");
        config.put("auto.offset.reset", "earliest");
        config.put("max.poll.records", Integer.toString(BATCH));
        config.put("key.deserializer", ByteArrayDeserializer.class.getName());
        config.put("value.deserializer", ByteArrayDeserializer.class.getName());
        if (kind.startsWith("consumer-")) {
            config.put("group.protocol", "consumer");
            config.put("group.remote.assignor", kind.substring("consumer-".length()));
        } else if (kind.equals("cooperative-sticky")) {
            config.put("partition.assignment.strategy",
                "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
        } else {
            config.put("partition.assignment.strategy", "org.apache.kafka.clients.consumer.RangeAssignor");
            if (kind.equals("static")) {
                config.put("group.instance.id", group + "-member-" + slot);
            }
        }
        return config;
    }

    private Properties producerConfig() {
        Properties config = new Properties();
        config.put("bootstrap.servers", bootstrap);
        config.put("enable.idempotence", "true");
        config.put("linger.ms", "5");
        config.put("key.serializer", ByteArraySerializer.class.getName());
        config.put("value.serializer", ByteArraySerializer.class.getName());
        return config;
    }

    /** One member's life: consume, produce onward, flush, commit, until its share is handled. */
    private void member(int slot) {
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig(slot));
             KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig())) {
            consumer.subscribe(List.of(source));
            int handled = 0;
            while (handled < quota && !finished()) {
                ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(100));
                if (polled.isEmpty()) {
                    continue;
                }
                long[] batch = new long[polled.count()];
                int n = 0;
                for (ConsumerRecord<byte[], byte[]> record : polled) {
                    producer.send(new ProducerRecord<>(sink, record.key(), record.value()));
                    batch[n++] = ((long) record.partition() << 40) | record.offset();
                }
                producer.flush();
                try {
                    consumer.commitSync();
                } catch (WakeupException | InterruptException e) {
                    throw e;
                } catch (KafkaException e) { // a rebalance meanwhile: the new owner handles these again
                    refusedCommits.incrementAndGet();
                    continue;
                }
                handled += n;
                for (int i = 0; i < n; i++) {
                    done.add(batch[i]);
                }
            }
        } catch (RuntimeException e) {
            errors.add(group + " member " + slot + ": " + e);
        }
    }

    private String run(double timeoutS, int members) throws InterruptedException {
        Thread[] threads = new Thread[members];
        int started = 0;
        long start = System.nanoTime();
        long deadline = start + (long) (timeoutS * 1e9);
        while (!finished() && System.nanoTime() < deadline && errors.isEmpty()) {
            for (int slot = 0; slot < members; slot++) {
                if (threads[slot] == null || !threads[slot].isAlive()) {
                    if (threads[slot] != null) {
                        threads[slot].join();
                    }
                    final int member = slot;
                    threads[slot] = new Thread(() -> member(member), "etl-" + group + "-" + slot);
                    threads[slot].setDaemon(true);
                    threads[slot].start();
                    started++;
                }
            }
            Thread.sleep(50);
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        for (Thread thread : threads) {
            if (thread != null) {
                thread.join(60_000);
            }
        }
        if (!errors.isEmpty()) {
            return "error " + errors.peek().replace('\n', ' ');
        }
        if (!finished()) {
            return "error " + group + ": " + done.size() + " of " + records + " records committed within "
                + timeoutS + " s";
        }
        return "done " + elapsed + " " + started + " " + refusedCommits.get();
    }

    public static void main(String[] args) throws Exception {
        EtlStage stage = new EtlStage(args);
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (!"go".equals(in.readLine())) {
            return;
        }
        System.out.println(stage.run(Double.parseDouble(args[7]), Integer.parseInt(args[6])));
        System.out.flush();
        System.exit(0);
    }
}
