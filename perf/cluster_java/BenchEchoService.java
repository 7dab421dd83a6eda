// SPDX-License-Identifier: Apache-2.0
// The Java service of perf/bench_cluster_three.py (our benchmark code, not Aeron's): what Aeron's sample
// io.aeron.samples.cluster.EchoService does (each session message offered back to its session, three attempts,
// idling with the cluster's idle strategy between them), in a public class that ClusteredServiceContainer can
// make by name (the sample's constructor is package-private). aeron/samples/cluster/echo_service.py is ours.
import io.aeron.ExclusivePublication;
import io.aeron.Image;
import io.aeron.cluster.codecs.CloseReason;
import io.aeron.cluster.service.ClientSession;
import io.aeron.cluster.service.Cluster;
import io.aeron.cluster.service.ClusteredService;
import io.aeron.logbuffer.Header;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.IdleStrategy;

public class BenchEchoService implements ClusteredService
{
    private IdleStrategy idleStrategy;

    public void onStart(final Cluster cluster, final Image snapshotImage)
    {
        idleStrategy = cluster.idleStrategy();
    }

    public void onSessionOpen(final ClientSession session, final long timestamp)
    {
    }

    public void onSessionClose(final ClientSession session, final long timestamp, final CloseReason closeReason)
    {
    }

    public void onSessionMessage(
        final ClientSession session,
        final long timestamp,
        final DirectBuffer buffer,
        final int offset,
        final int length,
        final Header header)
    {
        idleStrategy.reset();
        for (int attempt = 0; attempt < 3; attempt++)
        {
            if (session.offer(buffer, offset, length) > 0)
            {
                return;
            }
            idleStrategy.idle();
        }
    }

    public void onTimerEvent(final long correlationId, final long timestamp)
    {
    }

    public void onTakeSnapshot(final ExclusivePublication snapshotPublication)
    {
    }

    public void onRoleChange(final Cluster.Role newRole)
    {
    }

    public void onTerminate(final Cluster cluster)
    {
    }
}
