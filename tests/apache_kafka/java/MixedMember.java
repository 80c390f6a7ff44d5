// One member of a mixed consumer group, for kgroup's live tests: Apache Kafka's own Java
// KafkaConsumer (the pinned kafka-clients jar, classic group protocol), driven over stdin/stdout.
//
//   java -cp <this jar>:<kafka libs>/* MixedMember BOOTSTRAP GROUP CLIENT_ID TOPIC[,TOPIC...] ASSIGNOR_CLASS
//
// Protocol lines on stdout start with "@kgroup "; anything else there is the JVM's or log4j's and is
// only kept for error messages:
//   @kgroup assigned|revoked|lost TOPIC:PARTITION,...   a rebalance callback (revoked/lost wait for "ack")
//   @kgroup record TOPIC PARTITION OFFSET               a record returned by poll()
//   @kgroup error TEXT                                  the poll loop failed (the program then exits 1)
//   @kgroup closed                                      close() returned (LeaveGroup sent); exit 0 follows
// On stdin: "ack" answers a revoked/lost line; "stop" (or end of input) ends the poll loop and closes.
//
// Revocations wait for the test's "ack" so that the test has recorded the release before the
// consumer goes on (and, when closing, before its LeaveGroup lets another member take the partitions).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class MixedMember {
    private static final long ACK_TIMEOUT_S = 60;
    private static final LinkedBlockingQueue<String> ACKS = new LinkedBlockingQueue<>();
    private static final AtomicBoolean STOP = new AtomicBoolean();
    private static final AtomicBoolean INPUT_CLOSED = new AtomicBoolean();

    private MixedMember() {}

    private static synchronized void say(String line) {
        System.out.println("@kgroup " + line);
        System.out.flush();
    }

    private static String partitions(Collection<TopicPartition> tps) {
        List<String> out = new ArrayList<>();
        for (TopicPartition tp : tps) {
            out.add(tp.topic() + ":" + tp.partition());
        }
        return String.join(",", out);
    }

    private static void released(String what, Collection<TopicPartition> tps) {
        if (tps.isEmpty()) {
            return;
        }
        say(what + " " + partitions(tps));
        if (INPUT_CLOSED.get()) {
            return;
        }
        try {
            if (ACKS.poll(ACK_TIMEOUT_S, TimeUnit.SECONDS) == null && !INPUT_CLOSED.get()) {
                throw new IllegalStateException("no ack for '" + what + "' within " + ACK_TIMEOUT_S + " s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public static void main(String[] args) {
        if (args.length != 5) {
            System.err.println("usage: MixedMember BOOTSTRAP GROUP CLIENT_ID TOPICS ASSIGNOR_CLASS");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, args[2]);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, args[4]);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "30000");
        props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        List<String> topics = Arrays.asList(args[3].split(","));

        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);
        Thread input = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    String command = line.trim();
                    if (command.equals("ack")) {
                        ACKS.add(command);
                    } else if (command.equals("stop")) {
                        STOP.set(true);
                        consumer.wakeup();
                    }
                }
            } catch (Exception e) {
                // end of input: as "stop"
            }
            INPUT_CLOSED.set(true);
            STOP.set(true);
            ACKS.add("eof");
            consumer.wakeup();
        }, "stdin");
        input.setDaemon(true);
        input.start();

        int status = 0;
        try {
            consumer.subscribe(topics, new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                    say("assigned " + partitions(tps));
                }

                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                    released("revoked", tps);
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> tps) {
                    released("lost", tps);
                }
            });
            while (!STOP.get()) {
                try {
                    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        say("record " + r.topic() + " " + r.partition() + " " + r.offset());
                    }
                } catch (WakeupException e) {
                    // stop asked
                }
            }
        } catch (RuntimeException e) {
            say("error " + e.toString().replace('\n', ' '));
            status = 1;
        } finally {
            try {
                consumer.close(Duration.ofSeconds(30));
            } catch (RuntimeException e) {
                say("error on close: " + e.toString().replace('\n', ' '));
                status = 1;
            }
        }
        say("closed");
        System.exit(status);
    }
}
