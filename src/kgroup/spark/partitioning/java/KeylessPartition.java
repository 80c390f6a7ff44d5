package kgroup.spark;

import java.io.IOException;
import java.io.ObjectInputStream;
import java.nio.charset.StandardCharsets;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

/**
 * kgroup's keyless placement inside Spark's JVM: the partition of each null-key row for one
 * partition count, from a {@link KeylessProducer} per Spark task — what the Python side's Arrow UDF
 * ({@code _keyless_partitions_udf}) gives, so the rows need not leave the JVM.
 *
 * <p>Called with (is the key null, the partition index of the rows' RDD partition): a keyed row gets
 * null and changes nothing; a keyless row gets the next partition of the task's producer, created on
 * the task's first keyless row and seeded as Python's {@code task_seed(seed, partitionId,
 * numPartitions)} seeds {@code random.Random} — BLAKE2b (8 bytes) of {@code
 * "kgroup:<seed>:<partitionId>:<numPartitions>"}, big-endian, with {@code partitionId} the
 * TaskContext's, as the Python workers read it. A new RDD partition in the same task (a {@code
 * coalesce} reads several) starts a new producer, as a new Arrow UDF iterator does on the Python side.
 *
 * <p>Its state depends on the rows before, so {@link #udf} marks it non-deterministic: Spark then
 * neither pushes a filter below it (which would change the rows a producer sees) nor evaluates it
 * twice for a row. The state is kept per thread (each Spark task runs on one) and per task attempt,
 * so it is right however Spark shares the instance between tasks.
 */
public final class KeylessPartition implements UDF2<Boolean, Integer, Integer> {
    private static final long serialVersionUID = 1L;

    /** The name the UDF carries in Spark's plans (it is built per call, not registered by name). */
    public static final String FUNCTION_NAME = "kgroup_keyless_partition";

    private final String strategy;
    private final String seed;
    private final int numPartitions;
    private final long recordBytes;
    private final long batchSize;
    private transient ThreadLocal<TaskProducer> producers = new ThreadLocal<>();

    /** The producer of one task attempt and RDD partition. */
    private static final class TaskProducer {
        final long taskAttempt;
        final int partitionIndex;
        final KeylessProducer producer;

        TaskProducer(long taskAttempt, int partitionIndex, KeylessProducer producer) {
            this.taskAttempt = taskAttempt;
            this.partitionIndex = partitionIndex;
            this.producer = producer;
        }
    }

    /**
     * {@code seed}: the user's seed as Python writes it ({@code str(int)}), so any Python int works.
     * The strategy and sizes are checked here, on the driver, before any task.
     */
    public KeylessPartition(String strategy, String seed, int numPartitions, long recordBytes, long batchSize) {
        new KeylessProducer(strategy, PythonRandom.forUnsignedLong(0), numPartitions, recordBytes, batchSize);
        this.strategy = strategy;
        this.seed = seed;
        this.numPartitions = numPartitions;
        this.recordBytes = recordBytes;
        this.batchSize = batchSize;
    }

    /** The function as a non-deterministic Spark UDF of (key is null, partition index) to an int. */
    public static UserDefinedFunction udf(
        String strategy, String seed, int numPartitions, long recordBytes, long batchSize
    ) {
        KeylessPartition function = new KeylessPartition(strategy, seed, numPartitions, recordBytes, batchSize);
        return functions.udf(function, DataTypes.IntegerType).withName(FUNCTION_NAME).asNondeterministic();
    }

    /** Python's {@code kgroup.spark.null_keys.task_seed}, as the unsigned 64 bits of its int. */
    public static long taskSeed(String seed, int taskPartitionId, int numPartitions) {
        String text = "kgroup:" + seed + ":" + taskPartitionId + ":" + numPartitions;
        byte[] digest = Blake2b.digest(text.getBytes(StandardCharsets.UTF_8), 8);
        long value = 0;
        for (byte b : digest) {
            value = (value << 8) | (b & 0xff); // int.from_bytes(digest, "big")
        }
        return value;
    }

    @Override
    public Integer call(Boolean keyIsNull, Integer partitionIndex) {
        if (keyIsNull == null || !keyIsNull) {
            return null;
        }
        TaskContext task = TaskContext.get();
        long attempt = task == null ? -1 : task.taskAttemptId();
        int index = partitionIndex == null ? -1 : partitionIndex;
        TaskProducer current = producers.get();
        if (current == null || current.taskAttempt != attempt || current.partitionIndex != index) {
            int taskId = task == null ? 0 : task.partitionId(); // Python: 0 outside a task too
            PythonRandom rng = PythonRandom.forUnsignedLong(taskSeed(seed, taskId, numPartitions));
            current = new TaskProducer(
                attempt, index, new KeylessProducer(strategy, rng, numPartitions, recordBytes, batchSize));
            producers.set(current);
        }
        return current.producer.next();
    }

    private void readObject(ObjectInputStream in) throws IOException, ClassNotFoundException {
        in.defaultReadObject();
        producers = new ThreadLocal<>(); // each deserialized copy keeps its own producers
    }
}
