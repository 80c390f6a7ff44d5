// Runs the scripts of tests/share/share_partition_scripts.txt through Kafka 4.4.0's own
// kafka.server.share.SharePartition and prints what it did (Java 17):
//   L=~/.cache/kgroup/apache-kafka/4.4.0/libs
//   java -cp "$L/*" SharePartitionScripts.java < share_partition_scripts.txt 2>/dev/null \
//     | grep -E '^(script|acquired|ok|error) ' > share_partition_kafka.txt   (Kafka's own log lines dropped)
// The share partition runs with an in-memory persister keeping what the share coordinator keeps (the
// start offset, never moved back, and the state batches combined by Kafka's own
// PersisterStateBatchCombiner), a clock and a timer the script moves, log start 0. "restart" drops the
// partition and its timers and loads a new one from the persister, as after a broker's kill -9. One line per operation:
// its result, then the partition (start, end, next fetch offset, cached batches).
import java.lang.reflect.*;
import java.nio.ByteBuffer;
import java.util.*;
import java.util.concurrent.*;
import java.util.function.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.ShareFetchResponseData.AcquiredRecords;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.*;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.clients.consumer.internals.ShareAcquireMode;
import org.apache.kafka.coordinator.group.ShareGroupAutoOffsetResetStrategy;
import org.apache.kafka.coordinator.group.modern.share.ShareGroupConfigProvider;
import org.apache.kafka.server.share.PartitionMetadataProvider;
import org.apache.kafka.server.share.acknowledge.ShareAcknowledgementBatch;
import org.apache.kafka.server.share.dlq.NoOpShareGroupDLQManager;
import org.apache.kafka.server.share.fetch.*;
import org.apache.kafka.server.share.metrics.SharePartitionMetrics;
import org.apache.kafka.server.share.persister.*;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.storage.log.FetchPartitionData;
import org.apache.kafka.server.util.timer.Timer;
import org.apache.kafka.server.util.timer.TimerTask;
import org.apache.kafka.server.util.timer.TimerTaskEntry;

public class SharePartitionScripts {
    static long now = 0;

    static final class ScriptTime implements Time {
        public long milliseconds() { return now; }
        public long nanoseconds() { return now * 1_000_000L; }
        public void sleep(long ms) { now += ms; }
        public void waitObject(Object o, Supplier<Boolean> c, long d) { throw new UnsupportedOperationException(); }
    }

    static final class ScriptTimer implements Timer {
        final List<TimerTask> tasks = new ArrayList<>();
        public void add(TimerTask t) {
            // a task is live while it has an entry (TimerTask.isCancelled), as Kafka's SystemTimer gives it
            new TimerTaskEntry(t, ((AcquisitionLockTimerTask) t).expirationMs());
            tasks.add(t);
        }
        public boolean advanceClock(long ms) { return false; }
        public int size() { return (int) tasks.stream().filter(t -> !t.isCancelled()).count(); }
        public void close() { }
        void fire() {
            while (true) {
                AcquisitionLockTimerTask due = null;
                for (TimerTask t : tasks) {
                    AcquisitionLockTimerTask a = (AcquisitionLockTimerTask) t;
                    if (!a.isCancelled() && a.expirationMs() <= now && (due == null || a.expirationMs() < due.expirationMs())) due = a;
                }
                if (due == null) return;
                tasks.remove(due);
                due.run();  // Kafka's timer runs the task, which leaves its entry in place
            }
        }
    }

    static final class Config extends ShareGroupConfigProvider {
        final int lock, deliveries, locks;
        final boolean renew;
        Config(int lock, int deliveries, int locks, boolean renew) {
            super(null); this.lock = lock; this.deliveries = deliveries; this.locks = locks; this.renew = renew;
        }
        @Override public int recordLockDurationMsOrDefault(String g, int d) { return lock; }
        @Override public int deliveryCountLimitOrDefault(String g, int d) { return deliveries; }
        @Override public int partitionMaxRecordLocksOrDefault(String g, int d) { return locks; }
        @Override public boolean isRenewAcknowledgeEnabled(String g) { return renew; }
        @Override public ShareGroupAutoOffsetResetStrategy autoOffsetReset(String g) { return ShareGroupAutoOffsetResetStrategy.earliest(); }
        @Override public Optional<String> errorsDLQTopicName(String g) { return Optional.empty(); }
    }

    static final class Metadata implements PartitionMetadataProvider {
        public long offsetForEarliestTimestamp(TopicIdPartition p, int e) { return 0; }
        public long offsetForLatestTimestamp(TopicIdPartition p, int e) { return 0; }
        public long offsetForTimestamp(TopicIdPartition p, long t, int e) { return 0; }
        public org.apache.kafka.storage.internals.log.LogOffsetMetadata endOffsetMetadata(TopicIdPartition p, FetchIsolation i) { return null; }
        public int leaderEpoch(TopicIdPartition p) { return 0; }
        public boolean addPartitionListener(TopicIdPartition p, org.apache.kafka.server.partition.PartitionListener l) { return true; }
        public void removePartitionListener(TopicIdPartition p, org.apache.kafka.server.partition.PartitionListener l) { }
    }

    static Object sp;
    static ScriptTimer timer;

    /** What the share coordinator keeps for the one partition. */
    static final class MemoryPersister extends NoOpStatePersister {
        long start = -1;
        List<PersisterStateBatch> batches = List.of();

        @Override
        public CompletableFuture<ReadShareGroupStateResult> readState(ReadShareGroupStateParameters request) {
            Uuid topic = request.groupTopicPartitionData().topicsData().get(0).topicId();
            return CompletableFuture.completedFuture(new ReadShareGroupStateResult.Builder().setTopicsData(List.of(
                new TopicData<>(topic, List.of(PartitionFactory.newPartitionAllData(0, 0, start, (short) 0, null, batches))))).build());
        }

        @Override
        public CompletableFuture<WriteShareGroupStateResult> writeState(WriteShareGroupStateParameters request) {
            TopicData<PartitionStateBatchData> topic = request.groupTopicPartitionData().topicsData().get(0);
            PartitionStateBatchData data = topic.partitions().get(0);
            long newStart = start == -1 ? data.startOffset() : Math.max(start, data.startOffset());
            batches = new org.apache.kafka.coordinator.share.PersisterStateBatchCombiner(batches, data.stateBatches(), newStart).combineStateBatches();
            start = newStart;
            return CompletableFuture.completedFuture(new WriteShareGroupStateResult.Builder().setTopicsData(List.of(
                new TopicData<>(topic.topicId(), List.of(PartitionFactory.newPartitionErrorData(0, (short) 0, null))))).build());
        }
    }

    static MemoryPersister persister;
    static Constructor<?> ctor;
    static Config config;
    static final Time TIME = new ScriptTime();
    static final TopicIdPartition TP = new TopicIdPartition(Uuid.fromString("mUQ0Mkg0S6uUSe3pNnvU2A"), 0, "t");

    static void load() throws Exception {
        timer = new ScriptTimer();
        sp = ctor.newInstance("g", TP, 0, config.locks, config.deliveries, config.lock, timer, TIME, persister,
            new Metadata(), (Consumer<DelayedShareFetchKey>) k -> { }, config,
            null, (Supplier<Boolean>) () -> false, new NoOpShareGroupDLQManager());
        ((CompletableFuture<?>) call("maybeInitialize")).get();
    }

    static Object call(String name, Object... args) throws Exception {
        for (Method m : sp.getClass().getDeclaredMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == args.length) {
                m.setAccessible(true);
                try {
                    return m.invoke(sp, args);
                } catch (InvocationTargetException e) {
                    throw (Exception) e.getCause();
                }
            }
        }
        throw new NoSuchMethodException(name);
    }

    static MemoryRecords records(String spec) {
        // base:count (plain), base:count:t<pid> (transactional), base:1:a<pid> / base:1:c<pid> (abort / commit marker)
        List<ByteBuffer> parts = new ArrayList<>();
        int size = 0;
        for (String b : spec.split(",")) {
            String[] bc = b.split(":");
            long base = Long.parseLong(bc[0]);
            int count = Integer.parseInt(bc[1]);
            SimpleRecord[] recs = new SimpleRecord[count];
            for (int i = 0; i < count; i++) recs[i] = new SimpleRecord(0L, ("k" + i).getBytes(), ("v" + i).getBytes());
            ByteBuffer buf;
            if (bc.length == 2) {
                buf = MemoryRecords.withRecords(base, Compression.NONE, recs).buffer();
            } else {
                char kind = bc[2].charAt(0);
                long pid = Long.parseLong(bc[2].substring(1));
                if (kind == 't') {
                    buf = MemoryRecords.withTransactionalRecords(base, Compression.NONE, pid, (short) 0, 0, 0, recs).buffer();
                } else {
                    ControlRecordType type = kind == 'a' ? ControlRecordType.ABORT : ControlRecordType.COMMIT;
                    buf = MemoryRecords.withEndTransactionMarker(base, 0L, 0, pid, (short) 0, new EndTransactionMarker(type, 0)).buffer();
                }
            }
            parts.add(buf);
            size += buf.remaining();
        }
        ByteBuffer all = ByteBuffer.allocate(size);
        for (ByteBuffer p : parts) all.put(p.duplicate());
        all.flip();
        return MemoryRecords.readableRecords(all);
    }

    static Optional<List<FetchResponseData.AbortedTransaction>> aborted(String spec) {
        if (spec.equals("-")) return Optional.empty();
        List<FetchResponseData.AbortedTransaction> out = new ArrayList<>();
        for (String a : spec.split(";")) {
            String[] pf = a.split("@");
            out.add(new FetchResponseData.AbortedTransaction().setProducerId(Long.parseLong(pf[0])).setFirstOffset(Long.parseLong(pf[1])));
        }
        return Optional.of(out);
    }

    static String state() throws Exception {
        StringBuilder s = new StringBuilder();
        s.append(call("startOffset")).append(' ').append(call("endOffset")).append(' ').append(call("nextFetchOffset"));
        @SuppressWarnings("unchecked")
        NavigableMap<Long, InFlightBatch> cache = (NavigableMap<Long, InFlightBatch>) call("cachedState");
        for (InFlightBatch b : cache.values()) {
            s.append(" [").append(b.firstOffset()).append('-').append(b.lastOffset());
            if (b.offsetState() == null) {
                s.append(' ').append(b.batchState().id).append('/').append(b.batchDeliveryCount()).append('/').append(b.batchMemberId());
            } else {
                for (Map.Entry<Long, InFlightState> e : b.offsetState().entrySet())
                    s.append(' ').append(e.getValue().state().id).append('/').append(e.getValue().deliveryCount()).append('/').append(e.getValue().memberId());
            }
            s.append(']');
        }
        return s.toString();
    }

    static String error(Throwable t) {
        while (t instanceof CompletionException || t instanceof ExecutionException) t = t.getCause();
        return "error " + Errors.forException(t).name();
    }

    public static void main(String[] args) throws Exception {
        Scanner in = new Scanner(System.in);
        Class<?> cls = Class.forName("kafka.server.share.SharePartition");
        for (Constructor<?> c : cls.getDeclaredConstructors()) if (c.getParameterCount() == 15) ctor = c;
        ctor.setAccessible(true);
        while (in.hasNextLine()) {
            String line = in.nextLine().trim();
            if (line.isEmpty()) continue;
            String[] w = line.split(" ");
            String out;
            try {
                switch (w[0]) {
                    case "script": {
                        int locks = Integer.parseInt(w[2]), deliveries = Integer.parseInt(w[3]), lock = Integer.parseInt(w[4]);
                        now = 0;
                        persister = new MemoryPersister();
                        // script n locks deliveries lockMs [renew 0|1]
                        config = new Config(lock, deliveries, locks, w.length <= 5 || w[5].equals("1"));
                        load();
                        out = "script " + w[1];
                        break;
                    }
                    case "acquire": {
                        // acquire member fetchOffset maxFetch batchSize recordLimit batches
                        ShareAcquireMode mode = w[5].equals("1") ? ShareAcquireMode.RECORD_LIMIT : ShareAcquireMode.BATCH_OPTIMIZED;
                        // ... [isolation 0|1 (read_committed) aborted pid@first;...|-]
                        boolean committed = w.length > 7 && w[7].equals("1");
                        FetchPartitionData data = new FetchPartitionData(Errors.NONE, 1000, 0, records(w[6]), Optional.empty(),
                            OptionalLong.empty(), w.length > 8 ? aborted(w[8]) : Optional.empty(), OptionalInt.empty(), false);
                        ShareAcquiredRecords r = (ShareAcquiredRecords) call("acquire", w[1], mode, Integer.parseInt(w[4]),
                            Integer.parseInt(w[3]), Long.parseLong(w[2]), data,
                            committed ? FetchIsolation.TXN_COMMITTED : FetchIsolation.HIGH_WATERMARK);
                        StringJoiner j = new StringJoiner(",");
                        for (AcquiredRecords ar : r.acquiredRecords()) j.add(ar.firstOffset() + "-" + ar.lastOffset() + "/" + ar.deliveryCount());
                        out = "acquired " + r.count() + " " + (r.acquiredRecords().isEmpty() ? "-" : j.toString());
                        break;
                    }
                    case "ack": {
                        // ack member first-last:t.t.t;first-last:t
                        List<ShareAcknowledgementBatch> batches = new ArrayList<>();
                        for (String b : w[2].split(";")) {
                            String[] rt = b.split(":");
                            String[] fl = rt[0].split("-");
                            List<Byte> types = new ArrayList<>();
                            for (String t : rt[1].split("\\.")) types.add(Byte.parseByte(t));
                            batches.add(new ShareAcknowledgementBatch(Long.parseLong(fl[0]), Long.parseLong(fl[1]), types));
                        }
                        ((CompletableFuture<?>) call("acknowledge", w[1], batches)).get();
                        out = "ok";
                        break;
                    }
                    case "release": {
                        ((CompletableFuture<?>) call("releaseAcquiredRecords", w[1])).get();
                        out = "ok";
                        break;
                    }
                    case "advance": {
                        now += Long.parseLong(w[1]);
                        timer.fire();
                        out = "ok";
                        break;
                    }
                    case "restart": {
                        load();
                        out = "ok";
                        break;
                    }
                    case "lso": {
                        call("updateCacheAndOffsets", Long.parseLong(w[1]));
                        out = "ok";
                        break;
                    }
                    default:
                        throw new IllegalArgumentException(line);
                }
            } catch (Exception e) {
                out = error(e);
            }
            System.out.println(out + " | " + state());
        }
    }
}
