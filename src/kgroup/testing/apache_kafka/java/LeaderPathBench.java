// kgroup's benchmark of Apache Kafka's group-leader path (driven by kgroup.bench.java_leader).
//
//     java -cp <this jar>:<kafka libs> LeaderPathBench <input file> <output file>
//
// The input file (written by kgroup, all integers big-endian, strings as int32 length + UTF-8):
//     int32 format (1); string assignor; int32 preferRackAwareLogic (0/1); int32 warmups; int32 runs
//     int32 rack count; the rack names
//     int32 topic count; per topic: its name, int32 partition count, then per partition an int32 bit
//         mask of the racks of its replicas (bit i: rack i)
//     int32 member count; per member (JoinGroup response order): its id, int32 length, its
//         ConsumerProtocolSubscription bytes
//
// Every run takes a fresh assignor instance and times, in this JVM, after the warm-up runs:
//   bare   - assign(Cluster, GroupSubscription) on subscriptions deserialized before the clock starts
//   leader - ConsumerCoordinator.onLeaderElected's own steps: deserializeSubscription of every member
//            into a HashMap, assign(Cluster, GroupSubscription), serializeAssignment of every member
//            into a HashMap (the bytes SyncGroup sends)
// stdout gets one JSON line {"bare_ms": [...], "leader_ms": [...], "kafka": "<version>"}; the output
// file gets the last leader run's bytes: int32 member count, per member its id and its bytes (as
// above), so kgroup can check it produced the very same bytes.
//
// Written for kgroup; it calls Kafka's classes, it copies none of their code.

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.utils.internals.AppInfoParser;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public final class LeaderPathBench {
    private LeaderPathBench() {
    }

    private static String readString(DataInputStream in) throws IOException {
        byte[] data = new byte[in.readInt()];
        in.readFully(data);
        return new String(data, StandardCharsets.UTF_8);
    }

    private static void writeBytes(DataOutputStream out, byte[] data) throws IOException {
        out.writeInt(data.length);
        out.write(data);
    }

    private static ConsumerPartitionAssignor create(String name, boolean preferRack) {
        ConsumerPartitionAssignor assignor;
        switch (name) {
            case "range": assignor = new RangeAssignor(); break;
            case "roundrobin": assignor = new RoundRobinAssignor(); break;
            case "sticky": assignor = new StickyAssignor(); break;
            case "cooperative-sticky": assignor = new CooperativeStickyAssignor(); break;
            default: throw new IllegalArgumentException("unknown assignor " + name);
        }
        if (preferRack) {
            // Kafka's tests' switch (AbstractPartitionAssignor.preferRackAwareLogic), as kgroup's cases set it
            try {
                java.lang.reflect.Field field = org.apache.kafka.clients.consumer.internals.AbstractPartitionAssignor.class
                        .getDeclaredField("preferRackAwareLogic");
                field.setAccessible(true);
                field.setBoolean(assignor, true);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("preferRackAwareLogic is not settable: " + e);
            }
        }
        return assignor;
    }

    private static Map<String, ByteBuffer> leaderPath(ConsumerPartitionAssignor assignor, Cluster cluster,
                                                      List<String> ids, List<byte[]> metadata) {
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (int i = 0; i < ids.size(); i++) {
            subscriptions.put(ids.get(i), ConsumerProtocol.deserializeSubscription(ByteBuffer.wrap(metadata.get(i))));
        }
        Map<String, Assignment> assignments =
                assignor.assign(cluster, new GroupSubscription(subscriptions)).groupAssignment();
        Map<String, ByteBuffer> groupAssignment = new HashMap<>();
        for (Map.Entry<String, Assignment> entry : assignments.entrySet()) {
            groupAssignment.put(entry.getKey(), ConsumerProtocol.serializeAssignment(entry.getValue()));
        }
        return groupAssignment;
    }

    public static void main(String[] args) throws IOException {
        String assignorName;
        boolean preferRack;
        int warmups;
        int runs;
        List<Node> nodes = new ArrayList<>();
        List<PartitionInfo> partitions = new ArrayList<>();
        List<String> ids = new ArrayList<>();
        List<byte[]> metadata = new ArrayList<>();
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(args[0]), 1 << 20))) {
            if (in.readInt() != 1) {
                throw new IOException("unknown input format");
            }
            assignorName = readString(in);
            preferRack = in.readInt() != 0;
            warmups = in.readInt();
            runs = in.readInt();
            int rackCount = in.readInt();
            for (int r = 0; r < rackCount; r++) {
                nodes.add(new Node(r, "localhost", 9092 + r, readString(in)));
            }
            Node rackless = new Node(rackCount, "localhost", 9092 + rackCount);
            Map<Integer, Node[]> replicasOf = new HashMap<>();
            int topicCount = in.readInt();
            for (int t = 0; t < topicCount; t++) {
                String name = readString(in);
                int count = in.readInt();
                for (int p = 0; p < count; p++) {
                    int mask = in.readInt();
                    Node[] replicas = replicasOf.computeIfAbsent(mask, m -> {
                        List<Node> on = new ArrayList<>();
                        for (int r = 0; r < rackCount; r++) {
                            if ((m >> r & 1) != 0) {
                                on.add(nodes.get(r));
                            }
                        }
                        if (on.isEmpty()) {
                            on.add(rackless);
                        }
                        return on.toArray(new Node[0]);
                    });
                    partitions.add(new PartitionInfo(name, p, replicas[0], replicas, replicas));
                }
            }
            nodes.add(rackless);
            int memberCount = in.readInt();
            for (int m = 0; m < memberCount; m++) {
                ids.add(readString(in));
                byte[] data = new byte[in.readInt()];
                in.readFully(data);
                metadata.add(data);
            }
        }
        Cluster cluster = new Cluster("kgroup-bench", nodes, partitions, Collections.emptySet(), Collections.emptySet());
        Map<String, Subscription> prepared = new HashMap<>();
        for (int i = 0; i < ids.size(); i++) {
            prepared.put(ids.get(i), ConsumerProtocol.deserializeSubscription(ByteBuffer.wrap(metadata.get(i))));
        }
        List<Double> bare = new ArrayList<>();
        List<Double> leader = new ArrayList<>();
        Map<String, ByteBuffer> last = null;
        for (int i = 0; i < warmups + runs; i++) {
            ConsumerPartitionAssignor assignor = create(assignorName, preferRack);
            System.gc();
            long start = System.nanoTime();
            Map<String, Assignment> answer = assignor.assign(cluster, new GroupSubscription(prepared)).groupAssignment();
            long elapsed = System.nanoTime() - start;
            if (answer.size() != ids.size()) {
                throw new IllegalStateException("the assignor answered " + answer.size() + " members");
            }
            answer = null;
            if (i >= warmups) {
                bare.add(elapsed / 1e6);
            }
            assignor = create(assignorName, preferRack);
            System.gc();
            start = System.nanoTime();
            last = leaderPath(assignor, cluster, ids, metadata);
            elapsed = System.nanoTime() - start;
            if (i >= warmups) {
                leader.add(elapsed / 1e6);
            }
        }
        try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(new FileOutputStream(args[1]), 1 << 20))) {
            out.writeInt(last.size());
            for (Map.Entry<String, ByteBuffer> entry : last.entrySet()) {
                writeBytes(out, entry.getKey().getBytes(StandardCharsets.UTF_8));
                ByteBuffer buffer = entry.getValue().duplicate();
                byte[] data = new byte[buffer.remaining()];
                buffer.get(data);
                writeBytes(out, data);
            }
        }
        StringBuilder line = new StringBuilder("{\"bare_ms\": ").append(bare)
                .append(", \"leader_ms\": ").append(leader)
                .append(", \"kafka\": \"").append(AppInfoParser.getVersion()).append("\"}");
        System.out.println(line);
    }
}
