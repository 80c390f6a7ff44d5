// kgroup's side-by-side benchmark of Apache Kafka's Utils.murmur2 (driven by benchmarks/bench_murmur2.py).
//
//     java -cp <this jar>:<kafka libs> Murmur2Bench <keys file> <partitions>
//
// The keys file: int32 key count, then (count + 1) int32 offsets, then the key bytes (big-endian
// ints), the very keys kgroup hashes. Each key becomes its own byte[] (what a producer hands the
// partitioner). Then, for every line "run" on stdin, one timed pass of
// Utils.toPositive(Utils.murmur2(key)) % partitions over all keys, in this thread, answered with one
// line "<wall ns> <this thread's CPU ns> <sum of the partitions>"; the sum keeps the JIT from
// dropping the work and lets kgroup check it computed the same partitions. "quit" or the end of
// stdin ends it. kgroup interleaves its runs with these, so both see the same machine load.
//
// Written for kgroup; it calls Kafka's classes, it copies none of their code.

import org.apache.kafka.common.utils.Utils;

import java.io.BufferedInputStream;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;

public final class Murmur2Bench {
    private Murmur2Bench() {
    }

    private static long pass(byte[][] keys, int partitions) {
        long sum = 0;
        for (byte[] key : keys) {
            sum += Utils.toPositive(Utils.murmur2(key)) % partitions;
        }
        return sum;
    }

    public static void main(String[] args) throws IOException {
        byte[][] keys;
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(args[0]), 1 << 20))) {
            int count = in.readInt();
            int[] offsets = new int[count + 1];
            for (int i = 0; i <= count; i++) {
                offsets[i] = in.readInt();
            }
            keys = new byte[count][];
            for (int i = 0; i < count; i++) {
                keys[i] = new byte[offsets[i + 1] - offsets[i]];
                in.readFully(keys[i]);
            }
        }
        int partitions = Integer.parseInt(args[1]);
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        BufferedReader commands = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("ready " + keys.length);
        System.out.flush();
        String line;
        while ((line = commands.readLine()) != null && !line.equals("quit")) {
            long cpu = threads.getCurrentThreadCpuTime();
            long start = System.nanoTime();
            long sum = pass(keys, partitions);
            long wall = System.nanoTime() - start;
            cpu = threads.getCurrentThreadCpuTime() - cpu;
            System.out.println(wall + " " + cpu + " " + sum);
            System.out.flush();
        }
    }
}
