// SPDX-License-Identifier: Apache-2.0
// An AeronCluster client for aeron-py's interop tests (our test code, not Aeron's), driven line by line on stdin:
//   send <text>     offer <text>, retrying on back pressure
//   await <text>    poll egress until a message equal to <text> arrives (prints GOT <text>, or TIMEOUT)
//   poll <ms>       poll egress (sending keep-alives) for <ms> milliseconds, then print POLLED
//   burst <n> <len> offer n messages of len bytes (echoed, not printed) and wait for their n echoes, then print
//                   BURST <n> <nanoseconds from the first offer to the last echo> (or TIMEOUT burst)
//   close           close the client and exit
// It prints CONNECTED, every egress message as EGRESS <text>, NEW_LEADER events, and ERROR lines.
import io.aeron.cluster.client.AeronCluster;
import io.aeron.cluster.client.EgressListener;
import io.aeron.cluster.codecs.EventCode;
import io.aeron.logbuffer.Header;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayDeque;

public class ClusterTestClient
{
    public static void main(final String[] args) throws Exception
    {
        final String aeronDir = args[0];
        final String ingressEndpoints = args[1];
        final String egressChannel = args[2];
        final ArrayDeque<String> received = new ArrayDeque<>();
        final long[] burstEchoes = { -1 };
        final EgressListener listener = new EgressListener()
        {
            public void onMessage(
                final long clusterSessionId,
                final long timestamp,
                final DirectBuffer buffer,
                final int offset,
                final int length,
                final Header header)
            {
                if (burstEchoes[0] >= 0)
                {
                    burstEchoes[0]++;
                    return;
                }
                final String text = buffer.getStringWithoutLengthUtf8(offset, length);
                System.out.println("EGRESS " + text);
                received.add(text);
            }

            public void onSessionEvent(
                final long correlationId,
                final long clusterSessionId,
                final long leadershipTermId,
                final int leaderMemberId,
                final EventCode code,
                final String detail)
            {
                System.out.println("SESSION_EVENT " + code + " " + detail);
            }

            public void onNewLeader(
                final long clusterSessionId,
                final long leadershipTermId,
                final int leaderMemberId,
                final String ingressEndpoints)
            {
                System.out.println("NEW_LEADER " + leaderMemberId + " " + leadershipTermId);
            }
        };
        final AeronCluster.Context ctx = new AeronCluster.Context()
            .aeronDirectoryName(aeronDir)
            .ingressChannel("aeron:udp?term-length=64k")
            .ingressEndpoints(ingressEndpoints)
            .egressChannel(egressChannel)
            .egressListener(listener)
            .messageTimeoutNs(30_000_000_000L);
        try (AeronCluster client = AeronCluster.connect(ctx))
        {
            System.out.println("CONNECTED session=" + client.clusterSessionId() + " leader=" +
                client.leaderMemberId() + " term=" + client.leadershipTermId());
            final BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            final UnsafeBuffer buffer = new UnsafeBuffer(new byte[4096]);
            String line;
            while (null != (line = in.readLine()))
            {
                if (line.startsWith("send "))
                {
                    final int length = buffer.putStringWithoutLengthUtf8(0, line.substring(5));
                    final long deadline = System.nanoTime() + 30_000_000_000L;
                    long result;
                    while ((result = client.offer(buffer, 0, length)) < 0)
                    {
                        if (System.nanoTime() > deadline)
                        {
                            System.out.println("ERROR offer " + result);
                            break;
                        }
                        client.pollEgress();
                        Thread.sleep(1);
                    }
                    System.out.println("SENT " + line.substring(5));
                }
                else if (line.startsWith("await "))
                {
                    final String wanted = line.substring(6);
                    final long deadline = System.nanoTime() + 30_000_000_000L;
                    boolean found = false;
                    while (!found && System.nanoTime() < deadline)
                    {
                        found = received.remove(wanted);
                        if (!found && 0 == client.pollEgress())
                        {
                            client.sendKeepAlive();
                            Thread.sleep(1);
                        }
                    }
                    System.out.println(found ? "GOT " + wanted : "TIMEOUT " + wanted);
                }
                else if (line.startsWith("poll "))
                {
                    final long deadline = System.nanoTime() + Long.parseLong(line.substring(5)) * 1_000_000L;
                    while (System.nanoTime() < deadline)
                    {
                        if (0 == client.pollEgress())
                        {
                            client.sendKeepAlive();
                            Thread.sleep(1);
                        }
                    }
                    System.out.println("POLLED");
                }
                else if (line.startsWith("burst "))
                {
                    final String[] parts = line.split(" ");
                    final long count = Long.parseLong(parts[1]);
                    final int length = Integer.parseInt(parts[2]);
                    buffer.setMemory(0, length, (byte)'b');
                    burstEchoes[0] = 0;
                    final long start = System.nanoTime();
                    final long deadline = start + 120_000_000_000L;
                    long sent = 0;
                    while (burstEchoes[0] < count && System.nanoTime() < deadline)
                    {
                        final boolean offered = sent < count && client.offer(buffer, 0, length) > 0;
                        if (offered)
                        {
                            sent++;
                        }
                        if (0 == client.pollEgress() && !offered)
                        {
                            Thread.onSpinWait();
                        }
                    }
                    final long elapsed = System.nanoTime() - start;
                    System.out.println(burstEchoes[0] >= count ? "BURST " + count + " " + elapsed : "TIMEOUT burst");
                    burstEchoes[0] = -1;
                }
                else if (line.equals("close"))
                {
                    break;
                }
                System.out.flush();
            }
        }
        catch (final Exception ex)
        {
            System.out.println("ERROR " + ex);
            ex.printStackTrace(System.out);
        }
        System.out.println("CLOSED");
    }
}
