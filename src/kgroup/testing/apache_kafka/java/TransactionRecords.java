// The transaction coordinator's __transaction_state records as Kafka 4.4.0 writes and reads them: the
// "txn-record-bytes", "txn-add-partitions-bytes" and "txn-record-read" ops of kgroup's oracle
// (AssignorOracle.java).
//
// "txn-record-bytes" builds a TxnTransitMetadata from JSON (its partitions a `new HashSet<>(list)` of the
// given [topic, partition] pairs) and writes it with TransactionLog.keyToBytes / valueToBytes at the given
// transaction version:
//   Item:   {"transactionalId", "producerId", "prevProducerId", "nextProducerId", "producerEpoch",
//            "lastProducerEpoch", "txnTimeoutMs", "state" (its id), "partitions": [[t, p], ...],
//            "txnStartTimestamp", "txnLastUpdateTimestamp", "clientTransactionVersion", "transactionVersion"}
//   Result: {"key": "<hex>", "value": "<hex>"}
// "txn-add-partitions-bytes" runs Kafka's own TransactionMetadata through AddPartitionsToTxn steps (each a
// LinkedHashSet of pairs, prepareAddPartitions then completeTransitionTo) from a new Empty metadata and
// writes the last transition:
//   Item:   {"transactionalId", "producerId", "steps": [[[t, p], ...], ...], "transactionVersion"}
//   Result: {"key": "<hex>", "value": "<hex>"}
// "txn-metadata-steps" runs Kafka's TransactionMetadata through transitions (each prepared and completed
// as the coordinator does) from the given start, answering the metadata after each step, or the error:
//   Item:   {"start": {fields as above, "transactionalId"}, "steps": [{"op": "increment", "timeoutMs",
//            "expectedEpoch" | null, "now"} | {"op": "rotate", "producerId", "timeoutMs", "now",
//            "recordLastEpoch"} | {"op": "add", "partitions", "now", "clientTransactionVersion"} |
//            {"op": "end", "state", "clientTransactionVersion", "nextProducerId", "now", "noPartitionAdded"} |
//            {"op": "fenceAndAbort", "clientTransactionVersion", "now"} | {"op": "complete", "now"}, ...]}
//   Result: {"steps": [{metadata fields} | {"error": "illegal" | "fenced" | "<exception>"}, ...]}
//   (an error leaves the metadata as it was, its pending state cleared)
// "txn-record-read" reads bytes with TransactionLog.read:
//   Item:   {"key": "<hex>", "value": "<hex>" | null}
//   Result: {"kind": "record" | "tombstone" | "unknown-key" | "unknown-value", "transactionalId", and for a
//            record its metadata's fields as above, "partitions" in its set's iteration order}

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.coordinator.transaction.TransactionLog;
import org.apache.kafka.coordinator.transaction.TransactionMetadata;
import org.apache.kafka.coordinator.transaction.TransactionState;
import org.apache.kafka.coordinator.transaction.TxnTransitMetadata;
import org.apache.kafka.server.common.TransactionVersion;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;

final class TransactionRecords {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final HexFormat HEX = HexFormat.of();

    private TransactionRecords() {
    }

    private static List<TopicPartition> pairs(JsonNode node) {
        List<TopicPartition> out = new ArrayList<>();
        for (JsonNode pair : node) {
            out.add(new TopicPartition(pair.get(0).asText(), pair.get(1).asInt()));
        }
        return out;
    }

    private static TransactionVersion version(JsonNode item, String field) {
        return TransactionVersion.fromFeatureLevel((short) item.path(field).asInt());
    }

    private static ObjectNode written(String transactionalId, TxnTransitMetadata transit, TransactionVersion tv) {
        ObjectNode result = NODES.objectNode();
        result.put("key", HEX.formatHex(TransactionLog.keyToBytes(transactionalId)));
        result.put("value", HEX.formatHex(TransactionLog.valueToBytes(transit, tv)));
        return result;
    }

    static JsonNode bytes(JsonNode item) {
        TxnTransitMetadata transit = new TxnTransitMetadata(
            item.path("producerId").asLong(),
            item.path("prevProducerId").asLong(),
            item.path("nextProducerId").asLong(),
            (short) item.path("producerEpoch").asInt(),
            (short) item.path("lastProducerEpoch").asInt(),
            item.path("txnTimeoutMs").asInt(),
            TransactionState.fromId((byte) item.path("state").asInt()),
            new HashSet<>(pairs(item.path("partitions"))),
            item.path("txnStartTimestamp").asLong(),
            item.path("txnLastUpdateTimestamp").asLong(),
            version(item, "clientTransactionVersion"));
        return written(item.path("transactionalId").asText(), transit, version(item, "transactionVersion"));
    }

    static JsonNode addPartitionsBytes(JsonNode item) {
        String transactionalId = item.path("transactionalId").asText();
        TransactionVersion tv = version(item, "transactionVersion");
        TransactionMetadata metadata = new TransactionMetadata(transactionalId, item.path("producerId").asLong(),
            -1L, -1L, (short) 0, (short) -1, 60000, TransactionState.EMPTY, new HashSet<>(), -1L, 0L,
            TransactionVersion.TV_0);
        TxnTransitMetadata transit = null;
        long now = 1;
        for (JsonNode step : item.path("steps")) {
            transit = metadata.prepareAddPartitions(new LinkedHashSet<>(pairs(step)), now++, tv);
            metadata.completeTransitionTo(transit);
        }
        return written(transactionalId, transit, tv);
    }

    static JsonNode metadataSteps(JsonNode item) {
        JsonNode start = item.path("start");
        TransactionMetadata m = new TransactionMetadata(start.path("transactionalId").asText(),
            start.path("producerId").asLong(), start.path("prevProducerId").asLong(),
            start.path("nextProducerId").asLong(), (short) start.path("producerEpoch").asInt(),
            (short) start.path("lastProducerEpoch").asInt(), start.path("txnTimeoutMs").asInt(),
            TransactionState.fromId((byte) start.path("state").asInt()), new HashSet<>(pairs(start.path("partitions"))),
            start.path("txnStartTimestamp").asLong(), start.path("txnLastUpdateTimestamp").asLong(),
            version(start, "clientTransactionVersion"));
        ObjectNode result = NODES.objectNode();
        ArrayNode out = result.putArray("steps");
        for (JsonNode step : item.path("steps")) {
            try {
                TxnTransitMetadata transit;
                long now = step.path("now").asLong();
                switch (step.path("op").asText()) {
                    case "increment":
                        JsonNode expected = step.get("expectedEpoch");
                        transit = m.prepareIncrementProducerEpoch(step.path("timeoutMs").asInt(),
                            expected == null || expected.isNull() ? java.util.Optional.empty()
                                : java.util.Optional.of((short) expected.asInt()), now);
                        break;
                    case "rotate":
                        transit = m.prepareProducerIdRotation(step.path("producerId").asLong(),
                            step.path("timeoutMs").asInt(), now, step.path("recordLastEpoch").asBoolean());
                        break;
                    case "add":
                        transit = m.prepareAddPartitions(new LinkedHashSet<>(pairs(step.path("partitions"))), now,
                            version(step, "clientTransactionVersion"));
                        break;
                    case "end":
                        transit = m.prepareAbortOrCommit(TransactionState.fromId((byte) step.path("state").asInt()),
                            version(step, "clientTransactionVersion"), step.path("nextProducerId").asLong(), now,
                            step.path("noPartitionAdded").asBoolean());
                        break;
                    case "fenceAndAbort":
                        // TransactionCoordinator.endTransaction after prepareFenceProducerEpoch
                        TxnTransitMetadata fence = m.prepareFenceProducerEpoch();
                        m.pendingState(java.util.Optional.empty());
                        m.setProducerEpoch(fence.producerEpoch());
                        m.setLastProducerEpoch((short) -1);
                        transit = m.prepareAbortOrCommit(TransactionState.PREPARE_ABORT,
                            version(step, "clientTransactionVersion"), -1L, now, false);
                        break;
                    case "complete":
                        transit = m.prepareComplete(now);
                        break;
                    default:
                        throw new IllegalArgumentException("unknown step " + step);
                }
                m.completeTransitionTo(transit);
                out.add(fields(m));
            } catch (IllegalStateException | IllegalArgumentException e) {
                m.pendingState(java.util.Optional.empty());
                out.addObject().put("error", "illegal");
            } catch (org.apache.kafka.common.errors.ProducerFencedException e) {
                m.pendingState(java.util.Optional.empty());
                out.addObject().put("error", "fenced");
            }
        }
        return result;
    }

    private static ObjectNode fields(TransactionMetadata m) {
        ObjectNode result = NODES.objectNode();
        result.put("producerId", m.producerId());
        result.put("prevProducerId", m.prevProducerId());
        result.put("producerEpoch", m.producerEpoch());
        result.put("lastProducerEpoch", m.lastProducerEpoch());
        result.put("txnTimeoutMs", m.txnTimeoutMs());
        result.put("state", m.state().id());
        ArrayNode partitions = result.putArray("partitions");
        for (TopicPartition tp : m.topicPartitions()) {
            partitions.addArray().add(tp.topic()).add(tp.partition());
        }
        result.put("txnStartTimestamp", m.txnStartTimestamp());
        result.put("txnLastUpdateTimestamp", m.txnLastUpdateTimestamp());
        result.put("clientTransactionVersion", m.clientTransactionVersion().featureLevel());
        return result;
    }

    static JsonNode read(JsonNode item) {
        ByteBuffer key = ByteBuffer.wrap(HEX.parseHex(item.path("key").asText()));
        JsonNode valueNode = item.get("value");
        ByteBuffer value = valueNode == null || valueNode.isNull() ? null : ByteBuffer.wrap(HEX.parseHex(valueNode.asText()));
        TransactionLog.ReadResult read = TransactionLog.read(key, value);
        ObjectNode result = NODES.objectNode();
        if (read instanceof TransactionLog.TxnTombstone tombstone) {
            result.put("kind", "tombstone");
            result.put("transactionalId", tombstone.transactionId());
        } else if (read instanceof TransactionLog.UnknownKeyVersion) {
            result.put("kind", "unknown-key");
        } else if (read instanceof TransactionLog.UnknownValueVersion) {
            result.put("kind", "unknown-value");
        } else if (read instanceof TransactionLog.TxnRecord record) {
            TransactionMetadata m = record.metadata();
            result.put("kind", "record");
            result.put("transactionalId", record.transactionId());
            result.setAll(fields(m));
        }
        return result;
    }
}
