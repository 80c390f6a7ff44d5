// Prints tests/share/share_state_records.txt with Kafka 4.4.0's own classes (Java 17):
//   L=~/.cache/kgroup/apache-kafka/4.4.0/libs
//   java -cp "$L/kafka-clients-4.4.0.jar:$L/kafka-share-coordinator-4.4.0.jar" ShareStateRecords.java > share_state_records.txt
// Each line: name, key hex, value hex (MessageUtil.toCoordinatorTypePrefixedBytes / toVersionPrefixedBytes,
// as CoordinatorRecordSerde writes __share_group_state).
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.coordinator.share.generated.*;

public class ShareStateRecords {
    static final Uuid TOPIC = Uuid.fromString("mUQ0Mkg0S6uUSe3pNnvU2A");

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(String.format("%02x", x));
        return s.toString();
    }

    static void print(String name, ApiMessage key, ApiMessage value) {
        System.out.println(name + "\t" + hex(MessageUtil.toCoordinatorTypePrefixedBytes(key)) + "\t"
            + hex(MessageUtil.toVersionPrefixedBytes((short) 0, value)));
    }

    public static void main(String[] a) {
        print("snapshot", new ShareSnapshotKey().setGroupId("orders").setTopicId(TOPIC).setPartition(3),
            new ShareSnapshotValue().setSnapshotEpoch(2).setStateEpoch(1).setLeaderEpoch(7).setStartOffset(100)
                .setDeliveryCompleteCount(4).setCreateTimestamp(1700000000000L).setWriteTimestamp(1700000000123L)
                .setStateBatches(List.of(
                    new ShareSnapshotValue.StateBatch().setFirstOffset(100).setLastOffset(103).setDeliveryState((byte) 2).setDeliveryCount((short) 1),
                    new ShareSnapshotValue.StateBatch().setFirstOffset(104).setLastOffset(110).setDeliveryState((byte) 0).setDeliveryCount((short) 3),
                    new ShareSnapshotValue.StateBatch().setFirstOffset(111).setLastOffset(111).setDeliveryState((byte) 4).setDeliveryCount((short) 5))));
        print("snapshot-empty", new ShareSnapshotKey().setGroupId("g").setTopicId(TOPIC).setPartition(0),
            new ShareSnapshotValue().setSnapshotEpoch(0).setStateEpoch(0).setLeaderEpoch(0).setStartOffset(-1)
                .setCreateTimestamp(0).setWriteTimestamp(0).setStateBatches(List.of()));
        print("update", new ShareUpdateKey().setGroupId("orders").setTopicId(TOPIC).setPartition(3),
            new ShareUpdateValue().setSnapshotEpoch(2).setLeaderEpoch(7).setStartOffset(-1).setDeliveryCompleteCount(0)
                .setStateBatches(List.of(
                    new ShareUpdateValue.StateBatch().setFirstOffset(112).setLastOffset(115).setDeliveryState((byte) 0).setDeliveryCount((short) 1))));
        print("update-no-count", new ShareUpdateKey().setGroupId("组").setTopicId(TOPIC).setPartition(2147483647),
            new ShareUpdateValue().setSnapshotEpoch(0).setLeaderEpoch(-1).setStartOffset(5)
                .setStateBatches(List.of()));
    }
}
