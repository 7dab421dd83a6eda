// SPDX-License-Identifier: Apache-2.0
// A Java cluster member for aeron-py's interop tests (our test code, not Aeron's): a ClusteredMediaDriver (driver,
// archive, consensus module) and a ClusteredServiceContainer running an echo service, on free ports of 127.0.0.1
// given by the test. The service echoes each message to its session; "close-me" makes it close the session
// (SERVICE_ACTION). It prints "ROLE <role>" on each role change and "SNAPSHOT" when the service takes one.
// Arguments: memberId members baseDir aeronDir archivePort allowAdmin
import io.aeron.*;
import io.aeron.archive.*;
import io.aeron.archive.client.*;
import io.aeron.cluster.*;
import io.aeron.cluster.codecs.CloseReason;
import io.aeron.cluster.service.*;
import io.aeron.driver.*;
import io.aeron.logbuffer.Header;
import io.aeron.security.*;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.ShutdownSignalBarrier;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.*;

public class EchoClusterNode {
    static final class Echo implements ClusteredService {
        Cluster cluster;
        public void onStart(Cluster cluster, Image snapshotImage) { this.cluster = cluster; }
        public void onSessionOpen(ClientSession session, long timestamp) {}
        public void onSessionClose(ClientSession session, long timestamp, CloseReason closeReason) {
            System.out.println("SESSION_CLOSED " + session.id() + " " + closeReason);
        }
        public void onSessionMessage(ClientSession session, long timestamp, DirectBuffer buffer, int offset,
                                     int length, Header header) {
            if (length == 8 && "close-me".equals(buffer.getStringWithoutLengthAscii(offset, length))) {
                cluster.closeClientSession(session.id());
                return;
            }
            for (int i = 0; i < 100; i++) {
                if (session.offer(buffer, offset, length) > 0) return;
                cluster.idleStrategy().idle();
            }
        }
        public void onTimerEvent(long correlationId, long timestamp) {}
        public void onTakeSnapshot(ExclusivePublication snapshotPublication) { System.out.println("SNAPSHOT"); }
        public void onRoleChange(Cluster.Role newRole) { System.out.println("ROLE " + newRole); }
        public void onTerminate(Cluster cluster) {}
    }

    // credentials "challenge" are challenged with "nonce" and accepted answering "answer-to-nonce"; "reject" is
    // rejected; anything else is accepted at once
    static final class ChallengingAuthenticator implements Authenticator {
        final Map<Long, String> credentials = new HashMap<>();
        final Map<Long, String> answers = new HashMap<>();
        public void onConnectRequest(long sessionId, byte[] encoded, long nowMs) {
            credentials.put(sessionId, new String(encoded, StandardCharsets.US_ASCII));
        }
        public void onChallengeResponse(long sessionId, byte[] encoded, long nowMs) {
            answers.put(sessionId, new String(encoded, StandardCharsets.US_ASCII));
        }
        public void onConnectedSession(SessionProxy proxy, long nowMs) {
            String presented = credentials.getOrDefault(proxy.sessionId(), "");
            if (presented.equals("reject")) proxy.reject();
            else if (presented.equals("challenge")) proxy.challenge("nonce".getBytes(StandardCharsets.US_ASCII));
            else proxy.authenticate(null);
        }
        public void onChallengedSession(SessionProxy proxy, long nowMs) {
            String answer = answers.remove(proxy.sessionId());   // called every cycle until the answer came
            if (answer == null) return;
            if (answer.equals("answer-to-nonce")) proxy.authenticate(null);
            else proxy.reject();
        }
    }

    public static void main(String[] args) throws Exception {
        int memberId = Integer.parseInt(args[0]);
        String members = args[1];
        File base = new File(args[2]);
        String aeronDir = args[3];
        int archivePort = Integer.parseInt(args[4]);
        boolean allowAdmin = Boolean.parseBoolean(args[5]);
        MediaDriver.Context driverCtx = new MediaDriver.Context().aeronDirectoryName(aeronDir)
            .threadingMode(ThreadingMode.SHARED).dirDeleteOnStart(true).dirDeleteOnShutdown(true)
            .publicationTermBufferLength(64 * 1024).ipcTermBufferLength(64 * 1024);
        AeronArchive.Context replication = new AeronArchive.Context()
            .controlResponseChannel("aeron:udp?endpoint=localhost:0");
        Archive.Context archiveCtx = new Archive.Context().aeronDirectoryName(aeronDir)
            .archiveDir(new File(base, "archive")).deleteArchiveOnStart(true)
            .controlChannel("aeron:udp?endpoint=localhost:" + archivePort)
            .archiveClientContext(replication).localControlChannel("aeron:ipc?term-length=64k")
            .replicationChannel("aeron:udp?endpoint=localhost:0").recordingEventsEnabled(false)
            .threadingMode(ArchiveThreadingMode.SHARED).segmentFileLength(1024 * 1024);
        AeronArchive.Context archiveClient = new AeronArchive.Context()
            .controlRequestChannel(archiveCtx.localControlChannel())
            .controlRequestStreamId(archiveCtx.localControlStreamId())
            .controlResponseChannel(archiveCtx.localControlChannel()).aeronDirectoryName(aeronDir);
        ConsensusModule.Context cmCtx = new ConsensusModule.Context().clusterMemberId(memberId)
            .clusterMembers(members).clusterDir(new File(base, "cluster")).deleteDirOnStart(true)
            .archiveContext(archiveClient.clone()).serviceCount(1).ingressChannel("aeron:udp")
            .logChannel("aeron:udp?term-length=64k").replicationChannel("aeron:udp?endpoint=localhost:0")
            .authenticatorSupplier(ChallengingAuthenticator::new);
        if (allowAdmin) cmCtx.authorisationServiceSupplier(() -> AuthorisationService.ALLOW_ALL);
        ClusteredServiceContainer.Context serviceCtx = new ClusteredServiceContainer.Context()
            .aeronDirectoryName(aeronDir).archiveContext(archiveClient.clone())
            .clusterDir(new File(base, "cluster")).clusteredService(new Echo()).serviceId(0);
        try (ShutdownSignalBarrier barrier = new ShutdownSignalBarrier();
             ClusteredMediaDriver driver = ClusteredMediaDriver.launch(driverCtx.terminationHook(barrier::signalAll),
                 archiveCtx, cmCtx.terminationHook(barrier::signalAll));
             ClusteredServiceContainer container = ClusteredServiceContainer.launch(
                 serviceCtx.terminationHook(barrier::signalAll))) {
            System.out.println("STARTED " + memberId);
            barrier.await();
        }
    }
}
