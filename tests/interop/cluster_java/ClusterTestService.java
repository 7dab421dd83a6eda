// SPDX-License-Identifier: Apache-2.0
// A clustered service for aeron-py's interop tests (our test code, not Aeron's): it echoes each client message,
// counts the messages it echoed (kept in its snapshots), schedules timers and offers service messages on request.
//   "timer:<id>:<delayMs>"  schedule timer <id>; when it fires every session gets "timer-fired:<id>" (and the
//                           service prints "SERVICE_TIMER <id>")
//   "svc:<text>"            Cluster.offer(<text>); when the log delivers it every session gets "svc-msg:<text>"
//   "count?"                the session gets "count=<messages seen>"
//   "close-me"              the service closes the session
import io.aeron.ExclusivePublication;
import io.aeron.Image;
import io.aeron.cluster.codecs.CloseReason;
import io.aeron.cluster.service.ClientSession;
import io.aeron.cluster.service.Cluster;
import io.aeron.cluster.service.ClusteredService;
import io.aeron.logbuffer.Header;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.charset.StandardCharsets;

public class ClusterTestService implements ClusteredService
{
    private final UnsafeBuffer buffer = new UnsafeBuffer(new byte[1024]);
    private Cluster cluster;
    private long messageCount;

    public void onStart(final Cluster cluster, final Image snapshotImage)
    {
        this.cluster = cluster;
        if (null != snapshotImage)
        {
            final long[] loaded = { -1 };
            while (loaded[0] < 0)
            {
                final int fragments = snapshotImage.poll(
                    (buf, offset, length, header) -> loaded[0] = buf.getLong(offset), 1);
                if (0 == fragments)
                {
                    if (snapshotImage.isEndOfStream() || snapshotImage.isClosed())
                    {
                        break;
                    }
                    cluster.idleStrategy().idle();
                }
            }
            messageCount = Math.max(0, loaded[0]);
        }
        System.out.println("SERVICE_START count=" + messageCount);
    }

    public void onSessionOpen(final ClientSession session, final long timestamp)
    {
        System.out.println("SERVICE_SESSION_OPEN " + session.id());
    }

    public void onSessionClose(final ClientSession session, final long timestamp, final CloseReason closeReason)
    {
        System.out.println("SERVICE_SESSION_CLOSE " + session.id() + " " + closeReason);
    }

    public void onSessionMessage(
        final ClientSession session,
        final long timestamp,
        final DirectBuffer buffer,
        final int offset,
        final int length,
        final Header header)
    {
        final String text = buffer.getStringWithoutLengthUtf8(offset, length);
        if (null == session)
        {
            broadcast("svc-msg:" + text);
            return;
        }
        if (text.startsWith("timer:"))
        {
            final String[] parts = text.split(":");
            cluster.scheduleTimer(Long.parseLong(parts[1]), timestamp + Long.parseLong(parts[2]));
        }
        else if (text.startsWith("svc:"))
        {
            final byte[] bytes = text.substring(4).getBytes(StandardCharsets.UTF_8);
            this.buffer.putBytes(0, bytes);
            while (cluster.offer(this.buffer, 0, bytes.length) < 0)
            {
                cluster.idleStrategy().idle();
            }
        }
        else if (text.equals("count?"))
        {
            reply(session, "count=" + messageCount);
            return;
        }
        else if (text.equals("close-me"))
        {
            cluster.closeClientSession(session.id());
            return;
        }
        messageCount++;
        echo(session, buffer, offset, length);
    }

    public void onTimerEvent(final long correlationId, final long timestamp)
    {
        System.out.println("SERVICE_TIMER " + correlationId);
        broadcast("timer-fired:" + correlationId);
    }

    public void onTakeSnapshot(final ExclusivePublication snapshotPublication)
    {
        buffer.putLong(0, messageCount);
        while (snapshotPublication.offer(buffer, 0, 8) < 0)
        {
            cluster.idleStrategy().idle();
        }
        System.out.println("SERVICE_SNAPSHOT count=" + messageCount);
    }

    public void onRoleChange(final Cluster.Role newRole)
    {
        System.out.println("SERVICE_ROLE " + newRole);
    }

    public void onTerminate(final Cluster cluster)
    {
        System.out.println("SERVICE_TERMINATE");
    }

    private void echo(final ClientSession session, final DirectBuffer src, final int offset, final int length)
    {
        final long deadline = System.nanoTime() + 1_000_000_000L;
        while (session.offer(src, offset, length) < 0 && System.nanoTime() < deadline)
        {
            cluster.idleStrategy().idle();
        }
    }

    private void reply(final ClientSession session, final String text)
    {
        final int length = buffer.putStringWithoutLengthUtf8(0, text);
        echo(session, buffer, 0, length);
    }

    private void broadcast(final String text)
    {
        for (final ClientSession session : cluster.clientSessions())
        {
            reply(session, text);
        }
    }
}
