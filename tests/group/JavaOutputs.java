// Prints tests/group/java_outputs.txt: java JavaOutputs.java > java_outputs.txt (Java 17)
import java.util.*;
public class JavaOutputs {
    public static void main(String[] a) {
        String[] groups = {"group-id", "", "my-group", "consumer-group-1", "polygenelubricants", "GydZG_", "DESIGNING WORKHOUSES", "组", "g\uD83D\uDE00", "orders-processor"};
        for (String g : groups) {
            int h = g.hashCode();
            int abs = h == Integer.MIN_VALUE ? 0 : Math.abs(h);
            System.out.println("P\t" + g + "\t" + (abs % 50) + "\t" + (abs % 7));
        }
        // HashMap with puts and removals
        HashMap<String,Integer> m = new HashMap<>();
        Random r = new Random(42);
        List<String> live = new ArrayList<>();
        StringBuilder ops = new StringBuilder();
        for (int i = 0; i < 60; i++) {
            if (!live.isEmpty() && r.nextInt(3) == 0) {
                String k = live.remove(r.nextInt(live.size()));
                m.remove(k);
                ops.append("-").append(k).append(" ");
            } else {
                String k = "consumer-" + r.nextInt(40);
                if (!m.containsKey(k)) live.add(k);
                m.put(k, i);
                ops.append("+").append(k).append(" ");
            }
            if (i % 10 == 9) {
                System.out.println("OPS\t" + ops.toString().trim());
                System.out.println("ORDER\t" + String.join(" ", m.keySet()));
                ops.setLength(0);
            }
        }
    }
}
