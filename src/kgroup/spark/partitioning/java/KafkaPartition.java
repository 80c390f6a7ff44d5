package kgroup.spark;

import org.apache.spark.sql.api.java.UDF2;

/**
 * kgroup's keyed partitioning inside Spark's JVM: the partition a Kafka producer gives a record
 * with these key bytes, {@code toPositive(murmur2(key)) % numPartitions}.
 *
 * <p>Registered by {@code kgroup.spark.partitioning} as a Java UDF, so keyed rows are partitioned
 * without leaving the JVM. A null key gives null: keyless records are placed by the Python side's
 * null-key strategies. Written for kgroup from the murmur2 algorithm (32-bit, seed 0x9747b28c,
 * multiplier 0x5bd1e995, shift 24, little-endian 4-byte blocks); its answers are tested against
 * the same Kafka vectors as kgroup's Python and numba versions.
 */
public final class KafkaPartition implements UDF2<byte[], Integer, Integer> {
    private static final long serialVersionUID = 1L;

    private static final int SEED = 0x9747b28c;
    private static final int MULTIPLIER = 0x5bd1e995;
    private static final int SHIFT = 24;

    @Override
    public Integer call(byte[] key, Integer numPartitions) {
        if (key == null || numPartitions == null) {
            return null;
        }
        return (murmur2(key) & 0x7fffffff) % numPartitions;
    }

    /** murmur2 of {@code data} as a signed 32-bit value (Java int arithmetic wraps as the algorithm needs). */
    public static int murmur2(byte[] data) {
        int length = data.length;
        int h = SEED ^ length;
        int blocks = length >>> 2;
        for (int b = 0; b < blocks; b++) {
            int at = b << 2;
            int k = (data[at] & 0xff)
                | ((data[at + 1] & 0xff) << 8)
                | ((data[at + 2] & 0xff) << 16)
                | ((data[at + 3] & 0xff) << 24);
            k *= MULTIPLIER;
            k ^= k >>> SHIFT;
            k *= MULTIPLIER;
            h *= MULTIPLIER;
            h ^= k;
        }
        int tail = blocks << 2;
        switch (length & 3) {
            case 3:
                h ^= (data[tail + 2] & 0xff) << 16;
                // fall through
            case 2:
                h ^= (data[tail + 1] & 0xff) << 8;
                // fall through
            case 1:
                h ^= data[tail] & 0xff;
                h *= MULTIPLIER;
                break;
            default:
                break;
        }
        h ^= h >>> 13;
        h *= MULTIPLIER;
        h ^= h >>> 15;
        return h;
    }
}
