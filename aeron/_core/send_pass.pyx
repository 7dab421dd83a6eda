# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""SendPass: one compiled call sends the data of every publication of a send channel endpoint (the data half of
aeron_network_publication_send, for all publications at once).

``set_publications(entries)`` (sender thread, when publications come and go) takes per publication its three term
buffers, its snd-pos and snd-lmt counters, its MTU and its most datagrams per pass, and optionally its log and
snd-bpe counter. ``send(transport, address, now_ns)`` then, with the GIL released, scans each publication's term
from its sender position up to its sender limit (scan_for_availability: whole frames, at most an MTU per datagram,
padding skipped, at most two terms), gathers the datagrams of all publications into one sendmmsg (a second one past
MAX_BATCH datagrams), and moves each sender position over what the socket took. A publication that sent nothing
while data waits behind its closed window counts a back-pressure event (snd-bpe), as the per-publication send.

Setups, heartbeats, flow control's idle step and retransmits stay with the publication in Python, run only when
due: each publication has a due time (``set_due``); after a pass, ``due_count`` and ``due(k)`` name those whose
time has come, so a streaming publication costs no Python per duty cycle. ``sent(i)`` is what the last pass sent
for publication ``i``; ``take_sent(i)`` the bytes sent since it was last taken and ``last_sent_ns(i)`` when data
last went out (heartbeats count from there).

With ``set_fast_retransmit`` a unicast publication whose status messages are taken in compiled code
(``set_fast_status``) has its NAKs handled there too (``on_nak``, from ControlFrameReader.poll): unicast's one
retransmit action with no delay, as RetransmitHandler does it (a range resent at once, then NAKs inside it ignored
for the linger time), the range scanned and resent with sendmmsg through the bound transport.

A manual multi-destination-cast endpoint's pass (``set_destinations``) sends each gathered batch to every destination
in turn, starting one further each pass as ``aeron_udp_destination_tracker_send`` does, and its positions move over
the most any destination took: a destination whose socket refuses or fills (a member that is down) holds nobody
back and repairs its gap by NAK; only when no destination took a datagram does the rest wait. With no destination
the batch counts as sent (data sent to nobody, as Aeron's tracker counts it).
"""
from libc.errno cimport errno
from libc.stdint cimport INT64_MIN, int32_t, int64_t, uint8_t, uint32_t
from libc.stdlib cimport free, realloc

from aeron._core cimport logbuffer_descriptor as ld

from aeron._core.atomic cimport get_and_add_i64, load_acquire_i64, store_release_i64
from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core.counters cimport AtomicCounter
from aeron._core.logbuffer cimport LogBuffers
from aeron._core.term_scanner cimport term_scanner_scan_for_availability
from aeron._core.udp_transport cimport (
    MAX_BATCH, NO_TIMESTAMP, UdpTransport, nothing_sent, send_datagrams, sockaddr_storage, socklen_t, to_sockaddr,
)

from aeron.common.errors import ChannelEndpointError, IllegalStateError, InvalidArgumentError


cdef int _send_gathered(UdpTransport transport, int count, int *err) noexcept nogil:
    """sendmmsg of the ``count`` datagrams gathered in ``transport.tx_iov`` to its aimed destination: how many it
    took (0 when it would block), -1 with *err on failure."""
    cdef int n = send_datagrams(transport.fd, transport.tx, transport.tx_iov, count, &transport.destination,
                                transport.destination_length)
    if n < 0:
        err[0] = errno
        if nothing_sent(err[0]):
            return 0
    return n


cdef class SendPass:
    def __cinit__(self):
        self.slots = NULL
        self.due_slots = NULL
        self.due_count = 0
        self.count = 0
        self.capacity = 0
        self.round_robin = 0
        self._owners = []
        self._retransmit_owners = []
        self.bytes_sent = NULL
        self.resend_errno = 0
        self.multi_destination = False
        self.destinations = NULL
        self.destination_lengths = NULL
        self.destination_count = 0
        self.destination_capacity = 0
        self.destination_round_robin = 0

    def __dealloc__(self):
        free(self.slots)
        free(self.due_slots)
        free(self.destinations)
        free(self.destination_lengths)

    def set_destinations(self, UdpTransport transport, addresses):
        """A manual multi-destination-cast endpoint's destinations (``(host, port)`` each, of ``transport``'s address
        family): every pass from now on sends to all of them, whatever address ``send`` or ``bind`` names; None
        makes the pass a single destination's again. An address that is not one is refused and changes nothing.
        Called whenever the endpoint's destinations change (its thread)."""
        cdef int n, i
        cdef sockaddr_storage *grown
        cdef socklen_t *grown_lengths
        cdef sockaddr_storage checked
        cdef socklen_t checked_length
        if addresses is None:
            self.multi_destination = False
            self.destination_count = 0
            return
        transport._check()
        addresses = list(addresses)
        for address in addresses:           # all or nothing: a bad address leaves the destinations as they were
            to_sockaddr(address, transport.family, &checked, &checked_length)
        n = len(addresses)
        if n > self.destination_capacity:
            grown = <sockaddr_storage *>realloc(self.destinations, n * sizeof(sockaddr_storage))
            if grown == NULL:
                raise MemoryError()
            self.destinations = grown
            grown_lengths = <socklen_t *>realloc(self.destination_lengths, n * sizeof(socklen_t))
            if grown_lengths == NULL:
                raise MemoryError()
            self.destination_lengths = grown_lengths
            self.destination_capacity = n
        for i in range(n):
            to_sockaddr(addresses[i], transport.family, &self.destinations[i], &self.destination_lengths[i])
        self.destination_count = n
        self.destination_round_robin = 0
        self.multi_destination = True

    def set_publications(self, entries):
        """``entries``: (terms, snd_pos, snd_lmt, mtu, max_messages[, log, snd_bpe]) per publication, terms being its
        three term AtomicBuffers, log its LogBuffers (for the producer position) and snd_bpe its back-pressure
        counter (both or neither); replaces the table (allocates only when it grows). Every publication is due."""
        cdef int n = len(entries), i, k
        cdef PassSlot *grown
        cdef int32_t *grown_due
        cdef LogBuffers log
        cdef AtomicCounter snd_bpe
        cdef AtomicBuffer term
        cdef AtomicCounter snd_pos, snd_lmt
        cdef PassSlot *slot
        owners = []
        for entry in entries:
            if len(entry) not in (5, 7):
                raise InvalidArgumentError("an entry is (terms, snd_pos, snd_lmt, mtu, max_messages[, log, snd_bpe])")
            terms, snd_pos, snd_lmt, mtu, max_messages = entry[:5]
            if len(entry) == 7:
                log, snd_bpe = entry[5], entry[6]
                log.check_open()
                snd_bpe._check()
                if log.term_length != (<AtomicBuffer>terms[0]).length:
                    raise InvalidArgumentError("the log's term length differs from its terms'")
                owners.append((log, snd_bpe))
            if len(terms) != 3:
                raise InvalidArgumentError("a publication has three terms")
            first = terms[0]
            for term in terms:
                term.check(0, 0)
                if term.length != (<AtomicBuffer>first).length or term.length < 64 or \
                        term.length & (term.length - 1):
                    raise InvalidArgumentError(f"term length {term.length} must be a power of two, the same for all")
            snd_pos._check()
            snd_lmt._check()
            if mtu < 32 or max_messages < 1:
                raise InvalidArgumentError(f"bad mtu {mtu} or max messages {max_messages}")
            owners.append((terms, snd_pos, snd_lmt))
        if n > self.capacity:
            grown = <PassSlot *>realloc(self.slots, n * sizeof(PassSlot))
            if grown == NULL:
                raise MemoryError()
            self.slots = grown
            grown_due = <int32_t *>realloc(self.due_slots, n * sizeof(int32_t))
            if grown_due == NULL:
                raise MemoryError()
            self.due_slots = grown_due
            self.capacity = n
        for i in range(n):
            terms, snd_pos, snd_lmt, mtu, max_messages = entries[i][:5]
            slot = &self.slots[i]
            for k in range(3):
                term = terms[k]
                slot.terms[k] = term.data
            slot.term_length = <int32_t>(<AtomicBuffer>terms[0]).length
            slot.position_bits_to_shift = 0
            while (1 << slot.position_bits_to_shift) < slot.term_length:
                slot.position_bits_to_shift += 1
            slot.snd_pos = snd_pos.addr
            slot.snd_lmt = snd_lmt.addr
            slot.mtu = mtu
            slot.max_messages = max_messages if max_messages < MAX_BATCH else MAX_BATCH
            slot.sent = 0
            slot.meta = NULL
            slot.snd_bpe = NULL
            slot.initial_term_id = 0
            if len(entries[i]) == 7:
                log, snd_bpe = entries[i][5], entries[i][6]
                slot.meta = log.meta
                slot.initial_term_id = log.initial_term_id
                slot.snd_bpe = snd_bpe.addr
            slot.due_ns = INT64_MIN
            slot.last_sent_ns = INT64_MIN
            slot.total_sent = 0
            slot.session_id = 0
            slot.stream_id = 0
            slot.fast_status = False
            slot.fast_receiver_id = 0
            slot.last_status_ns = INT64_MIN
            slot.fast_naks = False
            slot.snd_naks = NULL
            slot.retransmits_sent = NULL
            slot.retransmitted_bytes = NULL
            slot.rtx_active = False
        self._owners = owners
        self._retransmit_owners = [None] * n
        self.count = n
        self.due_count = 0
        self.round_robin = 0

    def sent(self, int index):
        """Bytes the last ``send`` sent for publication ``index`` (its order in set_publications)."""
        if index < 0 or index >= self.count:
            raise IndexError(index)
        return self.slots[index].sent

    def due(self, int k):
        """The index of the ``k``-th publication whose Python part is due after the last pass."""
        if k < 0 or k >= self.due_count:
            raise IndexError(k)
        return self.due_slots[k]

    def set_due(self, int index, int64_t due_ns):
        """Run publication ``index``'s Python part after the first pass at or past ``due_ns``."""
        if index < 0 or index >= self.count:
            raise IndexError(index)
        self.slots[index].due_ns = due_ns

    def last_sent_ns(self, int index):
        """When a pass last sent data of publication ``index`` (the ``now_ns`` it was given)."""
        if index < 0 or index >= self.count:
            raise IndexError(index)
        return self.slots[index].last_sent_ns

    def set_fast_status(self, int index, int32_t session_id, int32_t stream_id, receiver_id):
        """Status messages of publication ``index`` (``session_id``, ``stream_id``) from ``receiver_id`` are taken in
        compiled code (ControlFrameReader, ``on_status_message``) while the publication's own handling of them would
        only move its sender limit under max flow control and note the time; ``receiver_id`` None: none are. Needs an
        entry with its log (the initial term id). A change of receiver, or None, forgets ``last_status_ns``: take it
        first."""
        if index < 0 or index >= self.count:
            raise IndexError(index)
        cdef PassSlot *slot = &self.slots[index]
        if receiver_id is None:
            slot.fast_status = False
            slot.last_status_ns = INT64_MIN         # the caller took it first (last_status_ns)
            return
        if slot.meta == NULL:
            raise IllegalStateError("status messages in compiled code need the publication's log")
        if not slot.fast_status or slot.fast_receiver_id != receiver_id:
            slot.last_status_ns = INT64_MIN
        slot.session_id = session_id
        slot.stream_id = stream_id
        slot.fast_receiver_id = receiver_id
        slot.fast_status = True

    def last_status_ns(self, int index):
        """When compiled code last took a status message of publication ``index`` (None: never since its entry)."""
        if index < 0 or index >= self.count:
            raise IndexError(index)
        cdef int64_t seen = self.slots[index].last_status_ns
        return None if seen == INT64_MIN else seen

    cdef bint on_status_message(self, int32_t session_id, int32_t stream_id, int32_t term_id, int32_t term_offset,
                                int32_t window, int64_t receiver_id, int64_t now_ns) noexcept nogil:
        """A status message without flags: True when taken here (a publication set by set_fast_status, its receiver,
        a window and a position its own handling would accept: the sender limit moves to the farthest position plus
        window, as max flow control), False for the publication's own handling."""
        cdef int j
        cdef PassSlot *slot
        cdef int64_t position, snd_pos, proposed
        for j in range(self.count):
            slot = &self.slots[j]
            if not slot.fast_status or slot.session_id != session_id or slot.stream_id != stream_id:
                continue
            if slot.fast_receiver_id != receiver_id or window < 0 or window > slot.term_length // 2 or \
                    term_offset >= slot.term_length:
                return False
            # the term count wraps as int32 arithmetic; multiplied, not shifted: it may be negative
            position = (<int64_t>(<int32_t>(<uint32_t>term_id - <uint32_t>slot.initial_term_id))) * \
                (<int64_t>1 << slot.position_bits_to_shift) + term_offset
            snd_pos = load_acquire_i64(slot.snd_pos)
            if position - snd_pos > slot.term_length // 2 or snd_pos - position > slot.term_length // 2:
                return False                          # the publication rejects it, and counts that
            proposed = position + window
            if proposed > load_acquire_i64(slot.snd_lmt):
                store_release_i64(slot.snd_lmt, proposed)
            slot.last_status_ns = now_ns
            return True
        return False

    def set_fast_retransmit(self, int index, AtomicCounter snd_naks=None, AtomicCounter retransmits_sent=None,
                            AtomicCounter retransmitted_bytes=None, int64_t linger_ns=0, int32_t resend_estimate=0,
                            int32_t max_message_length=0):
        """NAKs of publication ``index`` handled in compiled code (``on_nak``) while its status messages are
        (``set_fast_status``): counted in ``snd_naks``, resent through the bound transport, and each resend counted
        in ``retransmits_sent`` and ``retransmitted_bytes`` (both or neither). ``snd_naks`` None: none are. Forgets
        the range lingering from before."""
        if index < 0 or index >= self.count:
            raise IndexError(index)
        cdef PassSlot *slot = &self.slots[index]
        slot.rtx_active = False
        if snd_naks is None:
            slot.fast_naks = False
            slot.snd_naks = NULL
            slot.retransmits_sent = NULL
            slot.retransmitted_bytes = NULL
            self._retransmit_owners[index] = None
            return
        snd_naks._check()
        if (retransmits_sent is None) != (retransmitted_bytes is None):
            raise InvalidArgumentError("retransmits sent and retransmitted bytes go together")
        if linger_ns < 0 or resend_estimate < 32 or max_message_length < 0:
            raise InvalidArgumentError(f"bad linger {linger_ns}, resend estimate {resend_estimate} or max message "
                                       f"length {max_message_length}")
        if slot.meta == NULL:
            raise IllegalStateError("NAKs in compiled code need the publication's log")
        if retransmits_sent is not None:
            retransmits_sent._check()
            retransmitted_bytes._check()
            slot.retransmits_sent = retransmits_sent.addr
            slot.retransmitted_bytes = retransmitted_bytes.addr
        else:
            slot.retransmits_sent = NULL
            slot.retransmitted_bytes = NULL
        self._retransmit_owners[index] = (snd_naks, retransmits_sent, retransmitted_bytes)
        slot.snd_naks = snd_naks.addr
        slot.linger_ns = linger_ns
        slot.resend_estimate = resend_estimate
        slot.max_message_length = max_message_length
        slot.fast_naks = True

    def take_resend_errno(self):
        """The errno a compiled resend failed with since the last take (0: none), then 0."""
        cdef int err = self.resend_errno
        self.resend_errno = 0
        return err

    cdef int on_nak(self, int32_t session_id, int32_t stream_id, int32_t term_id, int32_t term_offset, int32_t length,
                    int64_t now_ns) noexcept nogil:
        """A NAK: NAK_TAKEN when handled here (a publication set by set_fast_retransmit and set_fast_status, and a
        bound transport), NAK_INVALID when its range runs past the term (dropped), NAK_NOT_TAKEN for the
        publication's own handling."""
        cdef int j
        cdef PassSlot *slot
        cdef int32_t to_end, resend_length
        if self.bytes_sent == NULL:
            return NAK_NOT_TAKEN                      # unbound: nowhere to resend from here
        for j in range(self.count):
            slot = &self.slots[j]
            if not slot.fast_naks or not slot.fast_status or slot.session_id != session_id or \
                    slot.stream_id != stream_id:
                continue
            # the reader checked the offset is >= 0 and 32-aligned and the length >= 0 (validate_frame)
            if term_offset >= slot.term_length or <int64_t>term_offset + length > slot.term_length:
                return NAK_INVALID
            get_and_add_i64(slot.snd_naks, 1)
            # RetransmitHandler.on_nak for unicast: one action, no delay
            if length <= 0 or term_offset > slot.term_length - 32:
                return NAK_TAKEN
            if slot.rtx_active and now_ns <= slot.rtx_expiry_ns and slot.rtx_term_id == term_id and \
                    slot.rtx_term_offset <= term_offset < <int64_t>slot.rtx_term_offset + slot.rtx_length:
                return NAK_TAKEN                      # resent a moment ago: lingering
            to_end = slot.term_length - term_offset
            if to_end < slot.resend_estimate:
                resend_length = to_end if to_end < length else length
            else:
                resend_length = slot.resend_estimate if slot.resend_estimate < length else length
            slot.rtx_term_id = term_id
            slot.rtx_term_offset = term_offset
            slot.rtx_length = resend_length
            slot.rtx_active = True
            slot.rtx_expiry_ns = now_ns + slot.linger_ns
            self._resend(slot, term_id, term_offset, resend_length)
            return NAK_TAKEN
        return NAK_NOT_TAKEN

    cdef int64_t _resend(self, PassSlot *slot, int32_t term_id, int32_t term_offset, int32_t length) noexcept nogil:
        """NetworkPublication.resend: ``length`` bytes from (term_id, term_offset) sent again if still in the log
        (within half a term and a message of the sender position), through the bound transport (aimed by the
        caller); returns the bytes it covered."""
        cdef int64_t position, snd_pos, total = 0
        cdef int32_t offset = term_offset, remaining, available, padding, max_length
        cdef int count, n, i, err = 0
        cdef uint8_t *term
        position = (<int64_t>(<int32_t>(<uint32_t>term_id - <uint32_t>slot.initial_term_id))) * \
            (<int64_t>1 << slot.position_bits_to_shift) + term_offset
        snd_pos = slot.snd_pos[0]                     # plain: only the sender writes it
        if position < 0 or position >= snd_pos or \
                position < snd_pos - (slot.term_length >> 1) - slot.max_message_length:
            return 0
        term = slot.terms[(position >> slot.position_bits_to_shift) % 3]
        remaining = slot.term_length - term_offset
        if length < remaining:
            remaining = length
        while remaining > 0:
            count = 0
            while count < MAX_BATCH and remaining > 0 and offset < slot.term_length:
                max_length = slot.mtu if slot.mtu < remaining else remaining
                available = term_scanner_scan_for_availability(term + offset, slot.term_length - offset, max_length,
                                                               &padding)
                if available <= 0:
                    break
                self.bound_transport.tx_iov[count].iov_base = term + offset
                self.bound_transport.tx_iov[count].iov_len = <size_t>available
                self.datagram_advance[count] = available + padding
                count += 1
                offset += available + padding
                remaining -= available + padding
            if count == 0:
                break
            if self.multi_destination:
                n = self._send_to_destinations(self.bound_transport, count, &err)
            else:
                n = _send_gathered(self.bound_transport, count, &err)
            if n < 0:
                self.resend_errno = err
                break
            for i in range(n):
                total += self.datagram_advance[i]
            if n < count:
                break                                 # the socket is full: the receiver NAKs the rest again
        # one retransmit per resend however many datagrams it took, as the C driver counts them
        if total > 0 and slot.retransmits_sent != NULL:
            get_and_add_i64(slot.retransmits_sent, 1)
            get_and_add_i64(slot.retransmitted_bytes, total)
        return total

    def take_sent(self, int index):
        """The bytes sent for publication ``index`` since the last take (then 0)."""
        if index < 0 or index >= self.count:
            raise IndexError(index)
        cdef int64_t total = self.slots[index].total_sent
        self.slots[index].total_sent = 0
        return total

    cdef int _send_to_destinations(self, UdpTransport transport, int count, int *err) noexcept nogil:
        """The ``count`` datagrams gathered to every destination (set_destinations), a sendmmsg each, from one
        further along each batch: the most any destination took (``count`` when there is none), -1 with *err when a
        send failed and none took any."""
        cdef int k, d, n, taken = 0, failed = 0
        cdef int destinations = self.destination_count
        if destinations == 0:
            return count
        self.destination_round_robin = (self.destination_round_robin + 1) % destinations
        for k in range(destinations):
            d = (self.destination_round_robin + k) % destinations
            n = send_datagrams(transport.fd, transport.tx, transport.tx_iov, count, &self.destinations[d],
                               self.destination_lengths[d])
            if n < 0:
                if not nothing_sent(errno):
                    failed = errno
                continue
            if n > taken:
                taken = n
        if taken == 0 and failed != 0:
            err[0] = failed
            return -1
        return taken

    cdef int _flush(self, UdpTransport transport, int count, int *err) noexcept nogil:
        """sendmmsg of the ``count`` datagrams gathered; moves the positions of the publications they came from over
        the ones the socket took. Returns how many it took (0 when it would block), -1 with *err on failure."""
        cdef int i
        cdef PassSlot *slot
        cdef int n
        if self.multi_destination:
            n = self._send_to_destinations(transport, count, err)
        else:
            n = _send_gathered(transport, count, err)
        if n < 0:
            return -1
        for i in range(n):
            slot = &self.slots[self.datagram_slot[i]]
            slot.sent += <int64_t>transport.tx_iov[i].iov_len
            slot.position += self.datagram_advance[i]
        return n

    def send(self, UdpTransport transport not None, address, int64_t now_ns=0):
        """Send what each publication may (see the module doc) to ``address`` in as few sendmmsg calls as it takes;
        ``now_ns`` is the duty cycle's time. Returns the bytes sent in all. The transport must use sendmmsg and stamp
        no send timestamps."""
        transport._check()
        if not transport.use_mmsg or transport.channel_send_timestamp_offset != NO_TIMESTAMP:
            raise IllegalStateError("the compiled send pass needs sendmmsg and no channel send timestamps")
        if not self.multi_destination:
            transport._destination(address)
        cdef int err = 0
        cdef int64_t total
        with nogil:
            total = self.run(transport, now_ns, &err)
        if err != 0 and not nothing_sent(err):
            raise ChannelEndpointError(f"{transport.name}: sendmmsg to {address} failed: errno {err}")
        return total

    def bind(self, UdpTransport transport, address, AtomicCounter bytes_sent=None):
        """Where a pass run from compiled code (DataSpin.backoff) sends: ``transport`` to ``address``, adding the bytes
        to ``bytes_sent``; ``transport`` None unbinds. Checked as ``send`` checks them."""
        if transport is None:
            self.bound_transport = None
            self.bound_address = None
            self._bound_counter = None
            self.bytes_sent = NULL
            return
        transport._check()
        if not transport.use_mmsg or transport.channel_send_timestamp_offset != NO_TIMESTAMP:
            raise IllegalStateError("the compiled send pass needs sendmmsg and no channel send timestamps")
        if bytes_sent is None:
            raise InvalidArgumentError("a bound pass adds to a bytes-sent counter")
        bytes_sent._check()
        if not self.multi_destination:
            transport._destination(address)      # an address it cannot take fails here, not in the spin
        self.bound_transport = transport
        self.bound_address = address
        self._bound_counter = bytes_sent
        self.bytes_sent = bytes_sent.addr

    @property
    def bound(self):
        """True when bound (``bind``): DataSpin.backoff may run this pass itself."""
        return self.bound_transport is not None

    cdef int prepare_bound(self) except -1:
        """Before passes run from compiled code: the bound transport open and aimed at the bound address (another
        send on this thread may have aimed it elsewhere)."""
        self.bound_transport._check()
        if not self.multi_destination:
            self.bound_transport._destination(self.bound_address)
        return 0

    cdef int64_t run(self, UdpTransport transport, int64_t now_ns, int *err) noexcept nogil:
        """The pass itself, ``transport`` aimed already: returns the bytes sent, *err set when a sendmmsg failed."""
        cdef int count = 0, i, j, s, n, taken, datagrams, budget
        cdef int start = 0
        cdef int64_t total = 0, position, limit, from_position, producer, raw_tail
        cdef int32_t term_offset, window, available, padding, max_length, term_length
        cdef uint8_t *term
        cdef PassSlot *slot
        cdef bint blocked = False
        self.due_count = 0
        self.datagrams_sent = 0
        if self.count == 0:
            return 0
        self.round_robin = (self.round_robin + 1) % self.count
        start = self.round_robin
        for j in range(self.count):
            slot = &self.slots[j]
            slot.sent = 0
            slot.position = slot.snd_pos[0]           # plain: only the sender writes it
        for j in range(self.count):
            if blocked:
                break
            s = (start + j) % self.count
            slot = &self.slots[s]
            term_length = slot.term_length
            limit = load_acquire_i64(slot.snd_lmt)
            position = slot.position
            budget = slot.max_messages
            # as network_publication's _send_data: at most two terms, stop when the scan stops inside one
            while budget > 0 and limit > position and not blocked:
                term_offset = <int32_t>(position & (term_length - 1))
                term = slot.terms[(position >> slot.position_bits_to_shift) % 3]
                window = <int32_t>(limit - position if limit - position < term_length else term_length)
                datagrams = 0
                while datagrams < budget and window > 0 and term_offset < term_length:
                    if count == MAX_BATCH:
                        taken = self._flush(transport, count, err)
                        if taken > 0:
                            self.datagrams_sent += taken
                        if taken < count:
                            blocked = True            # the socket is full (or failed): the rest waits
                            break
                        count = 0
                    max_length = slot.mtu if slot.mtu < window else window
                    available = term_scanner_scan_for_availability(term + term_offset, term_length - term_offset,
                                                                   max_length, &padding)
                    if available <= 0:
                        break
                    transport.tx_iov[count].iov_base = term + term_offset
                    transport.tx_iov[count].iov_len = <size_t>available
                    self.datagram_slot[count] = s
                    self.datagram_advance[count] = available + padding
                    count += 1
                    datagrams += 1
                    term_offset += available + padding
                    window -= available + padding
                    position += available + padding
                if datagrams == 0:
                    break
                budget -= datagrams
                if position & (term_length - 1):
                    break                             # stopped inside the term: nothing more to send now
        if count > 0 and not blocked:
            taken = self._flush(transport, count, err)
            if taken > 0:
                self.datagrams_sent += taken
        for j in range(self.count):
            slot = &self.slots[j]
            if slot.sent > 0:
                store_release_i64(slot.snd_pos, slot.position)
                total += slot.sent
                slot.total_sent += slot.sent
                slot.last_sent_ns = now_ns
            elif slot.meta != NULL and load_acquire_i64(slot.snd_lmt) <= slot.position:
                raw_tail = ld.raw_tail_volatile(slot.meta, ld.index_by_term_count(
                    ld.active_term_count_volatile(slot.meta)))
                producer = ld.compute_position(ld.term_id_of(raw_tail),
                                               ld.term_offset_of(raw_tail, slot.term_length),
                                               slot.position_bits_to_shift, slot.initial_term_id)
                if producer > slot.position:
                    # data waiting, window closed: back pressure (only the sender thread writes snd-bpe)
                    store_release_i64(slot.snd_bpe, slot.snd_bpe[0] + 1)
            if now_ns >= slot.due_ns:
                self.due_slots[self.due_count] = j
                self.due_count += 1
        return total
