// SPDX-License-Identifier: Apache-2.0
// An AeronCluster client for aeron-py's interop tests (our test code, not Aeron's), driven by its arguments.
import io.aeron.cluster.client.AeronCluster;
import io.aeron.cluster.client.EgressListener;
import org.agrona.concurrent.UnsafeBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

// Connects to the cluster, then runs its commands: send:<text> offers a message, await:<prefix> polls the egress
// until a message starting with <prefix> came; every egress message is printed as EGRESS <session> <text>.
public class ClusterEchoClient
{
    public static void main(final String[] args)
    {
        final List<String> received = new ArrayList<>();
        final EgressListener listener = (clusterSessionId, timestamp, buffer, offset, length, header) ->
        {
            final String text = buffer.getStringWithoutLengthUtf8(offset, length);
            received.add(text);
            System.out.println("EGRESS " + clusterSessionId + " " + text);
        };
        try (AeronCluster cluster = AeronCluster.connect(new AeronCluster.Context()
            .aeronDirectoryName(args[0])
            .ingressChannel("aeron:udp")
            .ingressEndpoints(args[1])
            .egressChannel("aeron:udp?endpoint=127.0.0.1:0")
            .messageTimeoutNs(20_000_000_000L)
            .egressListener(listener)))
        {
            System.out.println("SESSION " + cluster.clusterSessionId() + " " + cluster.leaderMemberId());
            final UnsafeBuffer buffer = new UnsafeBuffer(new byte[4096]);
            for (int i = 2; i < args.length; i++)
            {
                final String command = args[i];
                final long deadline = System.nanoTime() + 20_000_000_000L;
                if (command.startsWith("send:"))
                {
                    final byte[] bytes = command.substring(5).getBytes(StandardCharsets.UTF_8);
                    buffer.putBytes(0, bytes);
                    while (cluster.offer(buffer, 0, bytes.length) < 0)
                    {
                        cluster.pollEgress();
                        if (System.nanoTime() > deadline)
                        {
                            throw new IllegalStateException("offer timed out: " + command);
                        }
                        Thread.yield();
                    }
                }
                else if (command.startsWith("await:"))
                {
                    final String prefix = command.substring(6);
                    while (received.stream().noneMatch((s) -> s.startsWith(prefix)))
                    {
                        if (cluster.pollEgress() == 0)
                        {
                            if (System.nanoTime() > deadline)
                            {
                                throw new IllegalStateException("timed out awaiting " + prefix);
                            }
                            Thread.yield();
                        }
                    }
                }
            }
        }
        System.out.println("CLOSED");
    }
}
