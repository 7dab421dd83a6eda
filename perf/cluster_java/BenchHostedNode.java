// SPDX-License-Identifier: Apache-2.0
// A Java member of perf/bench_cluster_three.py --hosted (our benchmark code, not Aeron's): the member's
// ClusteredMediaDriver (driver, archive, consensus module) and a ClusteredServiceContainer running BenchEchoService
// in one JVM, as Aeron's BasicAuction tutorial hosts its service, so that Java's side has no container processes
// either. Everything comes from the system properties the benchmark gives the member (aeron.dir, aeron.cluster.dir,
// the idle strategies...): the container uses the member's aeron dir and cluster dir, as the separate container
// did, and keeps Java's defaults for its own agent (a thread of its own). Runs until SIGINT or SIGTERM; a SIGKILL
// takes the member and its service down together.
import io.aeron.cluster.ClusteredMediaDriver;
import io.aeron.cluster.service.ClusteredServiceContainer;
import org.agrona.concurrent.ShutdownSignalBarrier;

public final class BenchHostedNode
{
    public static void main(final String[] args)
    {
        final ShutdownSignalBarrier barrier = new ShutdownSignalBarrier();
        // the container connects to the driver and the consensus module this launches, so it starts second and
        // closes first
        try (ClusteredMediaDriver member = ClusteredMediaDriver.launch();
            ClusteredServiceContainer container = ClusteredServiceContainer.launch(
                new ClusteredServiceContainer.Context().clusteredService(new BenchEchoService())))
        {
            barrier.await();
        }
    }
}
