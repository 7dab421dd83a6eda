// SPDX-License-Identifier: Apache-2.0
// Java's AeronCluster as the client of perf/bench_cluster_three.py (our benchmark code, not Aeron's), driven line by
// line on stdin; every wait idles with Agrona's BackoffIdleStrategy (Java's default), nothing spins for long:
//   throughput <n> <len> <window>  offer n messages of len bytes, at most window of them unanswered, until every echo
//                                  is back: THROUGHPUT <n> <ns from the first offer to the last echo>
//   pingpong <n> <len>             n round trips, one message outstanding: RTT <n> <p50 ns> <p90 ns> <p99 ns> <max ns>
//   failover <len>                 one probe outstanding every millisecond (resent after 10 ms unanswered, or at once
//                                  when the leader changes), until
//                                  an echo comes in a later leadership term: FAILOVER <System.nanoTime of that echo>
//                                  <leader member id>; it prints FAILOVER_READY once echoes flow
//   close                          close the client and exit
// System.nanoTime is CLOCK_MONOTONIC on Linux, the clock of the harness's time.monotonic_ns().
import io.aeron.cluster.client.AeronCluster;
import io.aeron.cluster.client.EgressListener;
import io.aeron.logbuffer.Header;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Arrays;

public class ClusterBenchClient
{
    private static long echoes;
    private static long lastEchoNs;

    public static void main(final String[] args) throws Exception
    {
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
                echoes++;
                lastEchoNs = System.nanoTime();
            }
        };
        final AeronCluster.Context ctx = new AeronCluster.Context()
            .aeronDirectoryName(args[0])
            .ingressChannel("aeron:udp?term-length=64k")
            .ingressEndpoints(args[1])
            .egressChannel(args[2])
            .egressListener(listener)
            .messageTimeoutNs(30_000_000_000L);
        final IdleStrategy idle = new BackoffIdleStrategy();
        try (AeronCluster client = AeronCluster.connect(ctx))
        {
            System.out.println("CONNECTED leader=" + client.leaderMemberId());
            System.out.flush();
            final BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            final UnsafeBuffer buffer = new UnsafeBuffer(new byte[4096]);
            String line;
            while (null != (line = in.readLine()))
            {
                final String[] parts = line.split(" ");
                if (parts[0].equals("throughput"))
                {
                    final long count = Long.parseLong(parts[1]);
                    final int length = Integer.parseInt(parts[2]);
                    final long window = Long.parseLong(parts[3]);
                    buffer.setMemory(0, length, (byte)'t');
                    echoes = 0;
                    long sent = 0;
                    final long start = System.nanoTime();
                    final long deadline = start + 300_000_000_000L;
                    while (echoes < count && System.nanoTime() < deadline)
                    {
                        int work = 0;
                        while (sent < count && sent - echoes < window && client.offer(buffer, 0, length) > 0)
                        {
                            sent++;
                            work++;
                        }
                        work += client.pollEgress();
                        idle.idle(work);
                    }
                    System.out.println(echoes >= count ? "THROUGHPUT " + count + " " + (lastEchoNs - start) :
                        "TIMEOUT throughput " + echoes);
                }
                else if (parts[0].equals("pingpong"))
                {
                    final int count = Integer.parseInt(parts[1]);
                    final int length = Integer.parseInt(parts[2]);
                    buffer.setMemory(0, length, (byte)'p');
                    final long[] rtt = new long[count];
                    echoes = 0;
                    int done = 0;
                    final long deadline = System.nanoTime() + 300_000_000_000L;
                    while (done < count && System.nanoTime() < deadline)
                    {
                        final long sentNs = System.nanoTime();
                        while (client.offer(buffer, 0, length) < 0)
                        {
                            idle.idle(client.pollEgress());
                        }
                        idle.reset();
                        while (echoes == done && System.nanoTime() < deadline)
                        {
                            idle.idle(client.pollEgress());
                        }
                        idle.reset();
                        rtt[done++] = lastEchoNs - sentNs;
                    }
                    Arrays.sort(rtt, 0, done);
                    System.out.println(done == count ? "RTT " + count + " " + rtt[count / 2] + " " +
                        rtt[(int)(count * 0.9)] + " " + rtt[(int)(count * 0.99)] + " " + rtt[count - 1] :
                        "TIMEOUT pingpong " + done);
                }
                else if (parts[0].equals("failover"))
                {
                    final int length = Integer.parseInt(parts[1]);
                    buffer.setMemory(0, length, (byte)'f');
                    final long term = client.leadershipTermId();
                    final long deadline = System.nanoTime() + 300_000_000_000L;
                    long seen = echoes;
                    long lastOfferNs = 0;
                    long offerTerm = term;
                    boolean outstanding = false;
                    boolean ready = false;
                    while (System.nanoTime() < deadline)
                    {
                        int work = client.pollEgress();
                        final long now = System.nanoTime();
                        if (echoes != seen)
                        {
                            seen = echoes;
                            outstanding = false;
                            if (client.leadershipTermId() != term)
                            {
                                System.out.println("FAILOVER " + lastEchoNs + " " + client.leaderMemberId());
                                break;
                            }
                            if (!ready)
                            {
                                ready = true;
                                System.out.println("FAILOVER_READY");
                                System.out.flush();
                            }
                        }
                        if ((!outstanding && now - lastOfferNs >= 1_000_000L) ||
                            (outstanding && (now - lastOfferNs >= 10_000_000L || client.leadershipTermId() != offerTerm)))
                        {
                            if (client.offer(buffer, 0, length) > 0)
                            {
                                outstanding = true;
                                lastOfferNs = now;
                                offerTerm = client.leadershipTermId();
                                work++;
                            }
                            else
                            {
                                client.sendKeepAlive();
                            }
                        }
                        idle.idle(work);
                    }
                }
                else if (parts[0].equals("close"))
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
        System.out.flush();
    }
}
