package kgroup.spark;

/**
 * Python's {@code random.Random}, as far as kgroup's null-key strategies draw from it: seeded from
 * an int the way {@code random.Random(n)} seeds itself, then {@code getrandbits(32)}.
 *
 * <p>Python's generator is MT19937 (Matsumoto and Nishimura's reference algorithm). {@code
 * Random(n)} seeds it with {@code init_by_array} over the 32-bit words of {@code abs(n)}, least
 * significant word first ({@code [0]} for zero), and {@code getrandbits(32)} is one tempered output
 * word. kgroup's Python producers draw nothing else ({@code java_next_int}), so the Java side needs
 * nothing else to give the same partitions. Written for kgroup from the published algorithm; tested
 * against CPython's generator on many seeds.
 */
public final class PythonRandom {
    private static final int N = 624;
    private static final int M = 397;
    private static final int MATRIX_A = 0x9908b0df;
    private static final int UPPER_MASK = 0x80000000;
    private static final int LOWER_MASK = 0x7fffffff;

    private final int[] state = new int[N];
    private int index;

    private PythonRandom(int[] key) {
        initByArray(key);
    }

    /** {@code random.Random(seed)} for a seed in 0 .. 2**64 - 1, given as its unsigned 64 bits. */
    public static PythonRandom forUnsignedLong(long seed) {
        int low = (int) seed;
        int high = (int) (seed >>> 32);
        return new PythonRandom(high == 0 ? new int[] {low} : new int[] {low, high});
    }

    /**
     * {@code random.Random(n)} for any int: {@code magnitude} is {@code abs(n)} as little-endian
     * bytes (any length; high zero bytes are ignored, as Python counts only the bits it needs).
     */
    public static PythonRandom forMagnitude(byte[] magnitude) {
        int length = magnitude.length;
        while (length > 0 && magnitude[length - 1] == 0) {
            length--;
        }
        int words = Math.max(1, (length + 3) / 4);
        int[] key = new int[words];
        for (int i = 0; i < length; i++) {
            key[i / 4] |= (magnitude[i] & 0xff) << (8 * (i % 4));
        }
        return new PythonRandom(key);
    }

    private void initGenrand(int seed) {
        state[0] = seed;
        for (int i = 1; i < N; i++) {
            state[i] = 1812433253 * (state[i - 1] ^ (state[i - 1] >>> 30)) + i;
        }
        index = N;
    }

    private void initByArray(int[] key) {
        initGenrand(19650218);
        int i = 1;
        int j = 0;
        for (int k = Math.max(N, key.length); k > 0; k--) {
            state[i] = (state[i] ^ ((state[i - 1] ^ (state[i - 1] >>> 30)) * 1664525)) + key[j] + j;
            i++;
            j++;
            if (i >= N) {
                state[0] = state[N - 1];
                i = 1;
            }
            if (j >= key.length) {
                j = 0;
            }
        }
        for (int k = N - 1; k > 0; k--) {
            state[i] = (state[i] ^ ((state[i - 1] ^ (state[i - 1] >>> 30)) * 1566083941)) - i;
            i++;
            if (i >= N) {
                state[0] = state[N - 1];
                i = 1;
            }
        }
        state[0] = 0x80000000; // a non-zero initial state, as the reference code assures
    }

    private void twist() {
        int kk = 0;
        for (; kk < N - M; kk++) {
            int y = (state[kk] & UPPER_MASK) | (state[kk + 1] & LOWER_MASK);
            state[kk] = state[kk + M] ^ (y >>> 1) ^ ((y & 1) == 0 ? 0 : MATRIX_A);
        }
        for (; kk < N - 1; kk++) {
            int y = (state[kk] & UPPER_MASK) | (state[kk + 1] & LOWER_MASK);
            state[kk] = state[kk + (M - N)] ^ (y >>> 1) ^ ((y & 1) == 0 ? 0 : MATRIX_A);
        }
        int y = (state[N - 1] & UPPER_MASK) | (state[0] & LOWER_MASK);
        state[N - 1] = state[M - 1] ^ (y >>> 1) ^ ((y & 1) == 0 ? 0 : MATRIX_A);
        index = 0;
    }

    /** {@code getrandbits(32)}, as a Java int (the same 32 bits: kgroup's {@code java_next_int}). */
    public int nextInt() {
        if (index >= N) {
            twist();
        }
        int y = state[index++];
        y ^= y >>> 11;
        y ^= (y << 7) & 0x9d2c5680;
        y ^= (y << 15) & 0xefc60000;
        y ^= y >>> 18;
        return y;
    }
}
