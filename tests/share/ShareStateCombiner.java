// Prints tests/share/share_state_combiner.txt with Kafka 4.4.0's own PersisterStateBatchCombiner (Java 17):
//   L=~/.cache/kgroup/apache-kafka/4.4.0/libs
//   java -cp "$L/kafka-server-common-4.4.0.jar:$L/kafka-share-coordinator-4.4.0.jar:$L/kafka-clients-4.4.0.jar" \
//     ShareStateCombiner.java > share_state_combiner.txt
// Each line: start offset, the batches so far, the new batches, Kafka's combined batches; a batch is
// first,last,state,count and batches are separated by ';' (empty: '-').
import java.util.*;
import org.apache.kafka.coordinator.share.PersisterStateBatchCombiner;
import org.apache.kafka.server.share.persister.PersisterStateBatch;

public class ShareStateCombiner {
    static String show(List<PersisterStateBatch> batches) {
        if (batches.isEmpty()) return "-";
        StringJoiner j = new StringJoiner(";");
        for (PersisterStateBatch b : batches)
            j.add(b.firstOffset() + "," + b.lastOffset() + "," + b.deliveryState() + "," + b.deliveryCount());
        return j.toString();
    }

    static List<PersisterStateBatch> random(Random r, int n, int span) {
        List<PersisterStateBatch> out = new ArrayList<>();
        byte[] states = {0, 2, 4};
        for (int i = 0; i < n; i++) {
            long first = r.nextInt(span);
            long last = first + r.nextInt(6);
            out.add(new PersisterStateBatch(first, last, states[r.nextInt(3)], (short) (1 + r.nextInt(3))));
        }
        return out;
    }

    public static void main(String[] a) {
        Random r = new Random(932);
        for (int i = 0; i < 400; i++) {
            int span = 5 + r.nextInt(25);
            List<PersisterStateBatch> soFar = random(r, r.nextInt(5), span);
            List<PersisterStateBatch> fresh = random(r, r.nextInt(5), span);
            long start = r.nextInt(4) == 0 ? -1 : r.nextInt(span);
            List<PersisterStateBatch> combined = new PersisterStateBatchCombiner(soFar, fresh, start).combineStateBatches();
            System.out.println(start + "\t" + show(soFar) + "\t" + show(fresh) + "\t" + show(combined));
        }
    }
}
