package kgroup.spark;

/**
 * One modelled producer placing keyless records: kgroup's Python {@code KeylessProducer} (its
 * {@code ProducerModel} driving a null-key partitioner) in Java, giving the same partitions for the
 * same seed, record size and batch size.
 *
 * <p>The model as {@code KeylessProducer.place} drives it, for the one case it is used in: one
 * topic whose partitions all have a leader, every record keyless and of {@code recordBytes}, a broker
 * that keeps up. Per record: the partitioner chooses a partition; the record goes into that
 * partition's open batch if it has room, else a new batch ({@link #BATCH_HEADER_BYTES} plus the
 * record) is opened — for {@code uniform-sticky} only after the partitioner was told and asked again
 * (the producers of its era aborted the append on a new batch); after each new batch the full batches
 * are sent and the sender shows the queue sizes to the partitioner ({@code adaptive} weighs its next
 * choice by them). A queue holds closed batches and at most one open one at its tail, so a queue is
 * kept as its batch count and its last batch's size and state.
 *
 * <p>The strategies ({@code kgroup.partitioning.partitioners.builtin}):
 * <ul>
 *   <li>{@code adaptive} (KIP-794 BuiltInPartitioner): stick to a partition until {@code batchSize}
 *       bytes went to it (up to twice that while its last batch is open), then draw the next one,
 *       weighted against queue length once every partition has a queue;
 *   <li>{@code uniform-sticky} (KIP-480): stick until a new batch starts on the sticky partition,
 *       then draw a different one;
 *   <li>{@code round-robin}: a counter from 0;
 *   <li>{@code legacy-round-robin}: a counter from a random int.
 * </ul>
 * Every draw is one {@link PythonRandom#nextInt()}, as Python's {@code java_next_int}.
 */
public final class KeylessProducer {
    /** A v2 record batch's header: what a new batch adds before its first record. */
    public static final int BATCH_HEADER_BYTES = 61;

    private static final int NONE = -1;

    private enum Strategy { ADAPTIVE, UNIFORM_STICKY, ROUND_ROBIN, LEGACY_ROUND_ROBIN }

    private final Strategy strategy;
    private final PythonRandom rng;
    private final int numPartitions;
    private final long recordBytes;
    private final long batchSize;

    // the accumulator: per partition, batches queued (0 once all were sent) and the last one's state
    private final int[] queued;
    private final long[] lastBytes;
    private final boolean[] lastClosed;
    private final boolean[] hasQueue;
    private int queues; // partitions that have a queue: the load stats wait for all of them
    private long batchesCreated;
    private long batchesSent; // batchesCreated when the sender last ran

    // the partitioner
    private int sticky = NONE;
    private long producedBytes; // adaptive: bytes appended to the sticky partition
    private long[] cumulativeFrequency; // adaptive: null = choose uniformly
    private int counter;
    private boolean counterStarted; // legacy-round-robin draws its start on first use

    /**
     * A producer of {@code strategy} ({@code adaptive}, {@code uniform-sticky}, {@code round-robin},
     * {@code legacy-round-robin}) over {@code numPartitions} partitions.
     */
    public KeylessProducer(
        String strategy, PythonRandom rng, int numPartitions, long recordBytes, long batchSize
    ) {
        this.strategy = parse(strategy);
        if (numPartitions < 1) {
            throw new IllegalArgumentException("numPartitions: " + numPartitions + "; give 1 or more");
        }
        if (recordBytes < 1 || batchSize < 1) {
            throw new IllegalArgumentException(
                "recordBytes " + recordBytes + ", batchSize " + batchSize + ": give sizes of 1 or more");
        }
        this.rng = rng;
        this.numPartitions = numPartitions;
        this.recordBytes = recordBytes;
        this.batchSize = batchSize;
        this.queued = new int[numPartitions];
        this.lastBytes = new long[numPartitions];
        this.lastClosed = new boolean[numPartitions];
        this.hasQueue = new boolean[numPartitions];
    }

    private static Strategy parse(String name) {
        switch (name) {
            case "adaptive":
                return Strategy.ADAPTIVE;
            case "uniform-sticky":
                return Strategy.UNIFORM_STICKY;
            case "round-robin":
                return Strategy.ROUND_ROBIN;
            case "legacy-round-robin":
                return Strategy.LEGACY_ROUND_ROBIN;
            default:
                throw new IllegalArgumentException("strategy: '" + name + "' is not one kgroup's JVM models");
        }
    }

    /** The partition of the next keyless record. */
    public int next() {
        int partition = send();
        if (batchesCreated != batchesSent) { // the broker keeps up: send what is full, show the queues
            batchesSent = batchesCreated;
            drainFull();
            senderReady();
        }
        return partition;
    }

    /** The partitions of the next {@code count} keyless records, as text ("3,3,0"): for tests. */
    public String nextText(int count) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < count; i++) {
            if (i > 0) {
                out.append(',');
            }
            out.append(next());
        }
        return out.toString();
    }

    // -- the producer ---------------------------------------------------------------------------

    private int send() {
        int chosen = partition();
        int appended = append(chosen, strategy == Strategy.UNIFORM_STICKY);
        if (appended != NONE) {
            return appended;
        }
        // the append would open a batch: tell the partitioner, ask again, append for real
        onNewBatch(chosen);
        return append(partition(), false);
    }

    private boolean full(int p) {
        return lastClosed[p] || lastBytes[p] >= batchSize;
    }

    private boolean allFull(int p) {
        return queued[p] == 0 || full(p);
    }

    /** The record appended to {@code partition} (or where the partitioner moved it); NONE if aborted. */
    private int append(int partition, boolean abortOnNewBatch) {
        int p = partition;
        while (true) {
            if (!hasQueue[p]) {
                hasQueue[p] = true;
                queues++;
            }
            if (beforeAppend(allFull(p))) {
                p = partition();
                continue;
            }
            long appended;
            if (queued[p] > 0 && !full(p) && lastBytes[p] + recordBytes <= batchSize) {
                lastBytes[p] += recordBytes;
                appended = recordBytes;
            } else {
                if (queued[p] > 0) {
                    lastClosed[p] = true;
                }
                if (abortOnNewBatch) {
                    return NONE;
                }
                queued[p]++;
                lastBytes[p] = BATCH_HEADER_BYTES + recordBytes;
                lastClosed[p] = false;
                batchesCreated++;
                appended = BATCH_HEADER_BYTES + recordBytes;
            }
            recordAppended(p, appended, allFull(p));
            return p;
        }
    }

    /** Send every full batch: all but an open last one (every earlier batch was closed). */
    private void drainFull() {
        for (int p = 0; p < numPartitions; p++) {
            if (queued[p] > 0) {
                queued[p] = full(p) ? 0 : 1;
            }
        }
    }

    // -- the partitioner ------------------------------------------------------------------------

    private int draw() {
        return rng.nextInt() & 0x7fffffff; // toPositive(Random.nextInt())
    }

    private int partition() {
        switch (strategy) {
            case ADAPTIVE:
                if (sticky == NONE) {
                    switchSticky();
                }
                return sticky;
            case UNIFORM_STICKY:
                return sticky != NONE ? sticky : nextSticky(NONE);
            case ROUND_ROBIN:
                return (counter++ & 0x7fffffff) % numPartitions; // Java's int wraps, as AtomicInteger's
            default:
                if (!counterStarted) {
                    counter = rng.nextInt();
                    counterStarted = true;
                }
                return (counter++ & 0x7fffffff) % numPartitions;
        }
    }

    /** uniform-sticky's onNewBatch: a new batch on {@code previous}. */
    private void onNewBatch(int previous) {
        nextSticky(previous);
    }

    /** uniform-sticky: a different random partition, when the batch that filled was the sticky one's. */
    private int nextSticky(int previous) {
        int old = sticky;
        if (old != NONE && old != previous) {
            return old;
        }
        int candidate = old;
        if (numPartitions == 1) {
            candidate = 0;
        } else {
            while (candidate == NONE || candidate == old) {
                candidate = draw() % numPartitions;
            }
        }
        sticky = candidate;
        return candidate;
    }

    /** adaptive: complete a switch delayed while the batch was open; true when it switched. */
    private boolean beforeAppend(boolean queueAllFull) {
        if (strategy != Strategy.ADAPTIVE || !queueAllFull || sticky == NONE) {
            return false;
        }
        return update(0, true);
    }

    private void recordAppended(int partition, long appended, boolean enableSwitch) {
        if (strategy == Strategy.ADAPTIVE && sticky != NONE && sticky == partition) {
            update(appended, enableSwitch);
        }
    }

    private boolean update(long appended, boolean enableSwitch) {
        producedBytes += appended;
        if ((producedBytes >= batchSize && enableSwitch) || producedBytes >= 2 * batchSize) {
            switchSticky();
            return true;
        }
        return false;
    }

    /** adaptive: the next sticky partition, weighted against queue length when the stats allow. */
    private void switchSticky() {
        int draw = draw();
        long[] table = cumulativeFrequency;
        if (table == null) {
            sticky = draw % numPartitions;
        } else {
            long weighted = draw % table[table.length - 1];
            int low = 0;
            int high = table.length; // the first entry strictly greater than the weighted draw
            while (low < high) {
                int middle = (low + high) >>> 1;
                if (table[middle] > weighted) {
                    high = middle;
                } else {
                    low = middle + 1;
                }
            }
            sticky = low;
        }
        producedBytes = 0;
    }

    /** adaptive: the sender's load stats, a cumulative frequency table over the queue sizes. */
    private void senderReady() {
        if (strategy != Strategy.ADAPTIVE) {
            return;
        }
        cumulativeFrequency = null; // choose uniformly: until every partition has a queue, or all equal
        if (queues < numPartitions || numPartitions < 2) {
            return;
        }
        int max = queued[0];
        boolean allEqual = true;
        for (int p = 1; p < numPartitions; p++) {
            allEqual &= queued[p] == queued[0];
            max = Math.max(max, queued[p]);
        }
        if (allEqual) {
            return;
        }
        long[] table = new long[numPartitions];
        long running = 0;
        for (int p = 0; p < numPartitions; p++) {
            running += (long) max + 1 - queued[p];
            table[p] = running;
        }
        cumulativeFrequency = table;
    }
}
