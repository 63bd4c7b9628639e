-- Wireshark/tshark dissector for Homa (IP protocol 146, over IPv4 or IPv6),
-- as homa-dpdk and the Linux kernel's Homa module send it, and for Homa
-- packets sent as TCP-hijacked framing (IP protocol 6 whose flags are
-- SYN|RST and urgent pointer 0xb97d): those are dissected as TCP first (so
-- tshark validates their checksum: -o tcp.check_checksum:TRUE), then as
-- Homa; other TCP is left to TCP alone. The layout is the project's wire
-- format (docs/wire.md, implemented in wire/): a 28-byte common header laid
-- out like TCP's, then a header per packet type, big-endian.
--
-- Install: copy this file to ~/.local/lib/wireshark/plugins/ (Wireshark
-- 4.x), or load it for one run:
--
--   tshark -X lua_script:tools/wireshark/homa.lua -r capture.pcapng
--   tshark -X lua_script:tools/wireshark/homa.lua -r capture.pcapng -Y 'homa.type == 0x11' \
--          -T fields -e homa.sender_id -e homa.grant.offset -e homa.grant.priority
--
-- Every field is filterable: homa.type, homa.sport, homa.dport,
-- homa.sender_id, homa.data.offset, homa.grant.offset, ... (see the
-- ProtoField list below). The packet's priority is the IPv4 TOS's top
-- three bits (ip.dsfield), or the 802.1Q PCP.

local homa = Proto("homa", "Homa")

local types = {
	[0x10] = "DATA", [0x11] = "GRANT", [0x12] = "RESEND", [0x13] = "RPC_UNKNOWN",
	[0x14] = "BUSY", [0x15] = "CUTOFFS", [0x16] = "FREEZE", [0x17] = "NEED_ACK", [0x18] = "ACK",
}
-- Each type's whole header, bytes (shorter packets are malformed).
local header_len = {
	[0x10] = 56, [0x11] = 33, [0x12] = 37, [0x13] = 28, [0x14] = 28,
	[0x15] = 62, [0x16] = 28, [0x17] = 28, [0x18] = 80,
}

local f = {
	sport = ProtoField.uint16("homa.sport", "Source port"),
	dport = ProtoField.uint16("homa.dport", "Destination port"),
	sequence = ProtoField.uint32("homa.sequence", "Sequence"),
	type = ProtoField.uint8("homa.type", "Type", base.HEX, types),
	doff = ProtoField.uint8("homa.doff", "Data offset (words << 4)", base.HEX),
	flags = ProtoField.uint8("homa.flags", "Flags", base.HEX),
	window = ProtoField.uint16("homa.window", "Window"),
	checksum = ProtoField.uint16("homa.checksum", "Checksum", base.HEX),
	urgent = ProtoField.uint16("homa.urgent", "Urgent", base.HEX),
	sender_id = ProtoField.uint64("homa.sender_id", "Sender's RPC id"),
	rpc_id = ProtoField.uint64("homa.rpc_id", "Receiver's RPC id (sender_id ^ 1)"),
	role = ProtoField.string("homa.role", "Sent by"),

	message_length = ProtoField.uint32("homa.data.message_length", "Message length"),
	incoming = ProtoField.uint32("homa.data.incoming", "Incoming (sent without more grants up to)"),
	ack_client_id = ProtoField.uint64("homa.ack.client_id", "Acked client RPC id"),
	ack_server_port = ProtoField.uint16("homa.ack.server_port", "Acked RPC's server port"),
	cutoff_version = ProtoField.uint16("homa.cutoff_version", "Cutoff version"),
	retransmit = ProtoField.uint8("homa.data.retransmit", "Retransmit"),
	pad = ProtoField.bytes("homa.data.pad", "Pad"),
	allowance = ProtoField.uint32("homa.data.incast_allowance", "Incast allowance (homa-dpdk)"),
	seg_offset = ProtoField.uint32("homa.data.seg_offset", "Segment offset field", base.HEX),
	offset = ProtoField.uint32("homa.data.offset", "Offset of this packet's first byte"),
	payload_len = ProtoField.uint32("homa.data.payload_length", "Payload bytes"),
	payload = ProtoField.bytes("homa.data.payload", "Payload"),

	grant_offset = ProtoField.uint32("homa.grant.offset", "Granted up to"),
	grant_priority = ProtoField.uint8("homa.grant.priority", "Priority"),

	resend_offset = ProtoField.uint32("homa.resend.offset", "Offset"),
	resend_length = ProtoField.uint32("homa.resend.length", "Length"),
	resend_priority = ProtoField.uint8("homa.resend.priority", "Priority"),

	cutoff = ProtoField.uint32("homa.cutoffs.cutoff", "Unscheduled cutoff"),

	num_acks = ProtoField.uint16("homa.ack.num_acks", "Acks"),
}
homa.fields = {}
for _, v in pairs(f) do
	table.insert(homa.fields, v)
end

local ef_short = ProtoExpert.new("homa.short", "Shorter than its type's header", expert.group.MALFORMED, expert.severity.ERROR)
local ef_type = ProtoExpert.new("homa.bad_type", "Unknown Homa packet type", expert.group.MALFORMED, expert.severity.ERROR)
homa.experts = { ef_short, ef_type }

-- ack: client_id u64 (0: none), server_port u16.
local function add_ack(tree, buf, at)
	local t = tree:add(homa, buf(at, 10), "Ack")
	t:add(f.ack_client_id, buf(at, 8))
	t:add(f.ack_server_port, buf(at + 8, 2))
	return buf(at, 8):uint64()
end

local function dissect_data(buf, tree, info)
	tree:add(f.message_length, buf(28, 4))
	tree:add(f.incoming, buf(32, 4))
	add_ack(tree, buf, 36)
	tree:add(f.cutoff_version, buf(46, 2))
	tree:add(f.retransmit, buf(48, 1))
	local pad = tree:add(f.pad, buf(49, 3))
	if buf(49, 1):uint() == 0x81 then -- homa-dpdk's incast allowance, 64-byte units
		pad:add(f.allowance, buf(50, 2), buf(50, 2):uint() * 64)
	end
	tree:add(f.seg_offset, buf(52, 4))
	local offset = buf(52, 4):uint()
	if offset == 0xFFFFFFFF then -- the offset is in the common header's sequence
		offset = buf(4, 4):uint()
		tree:add(f.offset, buf(4, 4), offset):append_text(" (from sequence)")
	else
		tree:add(f.offset, buf(52, 4), offset)
	end
	-- The payload's length as sent (reported_len), though a capture's
	-- snap length may have kept only the headers.
	local n = buf:reported_len() - 56
	tree:add(f.payload_len, n):set_generated()
	if buf:len() > 56 then
		tree:add(f.payload, buf(56))
	end
	local retx = buf(48, 1):uint() ~= 0 and " retransmit" or ""
	info(string.format("DATA %d@%d of %d%s", n, offset, buf(28, 4):uint(), retx))
end

local function dissect_grant(buf, tree, info)
	tree:add(f.grant_offset, buf(28, 4))
	tree:add(f.grant_priority, buf(32, 1))
	info(string.format("GRANT to %d p%d", buf(28, 4):uint(), buf(32, 1):uint()))
end

local function dissect_resend(buf, tree, info)
	tree:add(f.resend_offset, buf(28, 4))
	tree:add(f.resend_length, buf(32, 4))
	if buf:len() >= 37 then -- the upstream subset's RESEND is 36 bytes, without it
		tree:add(f.resend_priority, buf(36, 1))
	end
	local len = buf(32, 4):uint()
	local what = len == 0xFFFFFFFF and "all" or tostring(len)
	info(string.format("RESEND %s@%d p%d", what, buf(28, 4):uint(), buf(36, 1):uint()))
end

local function dissect_cutoffs(buf, tree, info)
	local t = tree:add(homa, buf(28, 32), "Unscheduled cutoffs (entry 0 ignored)")
	for i = 0, 7 do
		t:add(f.cutoff, buf(28 + 4 * i, 4)):prepend_text(string.format("[%d] ", i))
	end
	tree:add(f.cutoff_version, buf(60, 2))
	info(string.format("CUTOFFS version %d", buf(60, 2):uint()))
end

local function dissect_ack(buf, tree, info)
	tree:add(f.num_acks, buf(28, 2))
	local n = math.min(buf(28, 2):uint(), 5)
	for i = 0, n - 1 do
		add_ack(tree, buf, 30 + 10 * i)
	end
	info(string.format("ACK %d more", n))
end

local by_type = {
	[0x10] = dissect_data, [0x11] = dissect_grant, [0x12] = dissect_resend,
	[0x15] = dissect_cutoffs, [0x18] = dissect_ack,
}

function homa.dissector(buf, pinfo, root)
	if buf:len() < 28 then
		local t = root:add(homa, buf())
		t:add_proto_expert_info(ef_short)
		return 0
	end
	pinfo.cols.protocol = "Homa"
	local typ = buf(11, 1):uint()
	local name = types[typ] or string.format("type 0x%02x", typ)
	local tree = root:add(homa, buf(0, math.min(buf:len(), header_len[typ] or 28)), "Homa " .. name)
	tree:add(f.sport, buf(0, 2))
	tree:add(f.dport, buf(2, 2))
	tree:add(f.sequence, buf(4, 4))
	tree:add(f.type, buf(11, 1))
	tree:add(f.doff, buf(12, 1))
	tree:add(f.flags, buf(13, 1))
	tree:add(f.window, buf(14, 2))
	tree:add(f.checksum, buf(16, 2))
	tree:add(f.urgent, buf(18, 2))
	tree:add(f.sender_id, buf(20, 8))
	local id = buf(20, 8):uint64()
	tree:add(f.rpc_id, buf(20, 8), id:bxor(1)):set_generated()
	-- Client ids are even: the packet's sender is the RPC's client.
	tree:add(f.role, id:band(1) == UInt64(0) and "client" or "server"):set_generated()
	local info = function(s)
		pinfo.cols.info = string.format("%d → %d id %s %s", buf(0, 2):uint(), buf(2, 2):uint(), tostring(id), s)
	end
	if not types[typ] then
		tree:add_proto_expert_info(ef_type)
		info(name)
		return buf:len()
	end
	if buf:len() < header_len[typ] and not (typ == 0x12 and buf:len() >= 36) then
		tree:add_proto_expert_info(ef_short)
		info(name .. " (short)")
		return buf:len()
	end
	local d = by_type[typ]
	if d then
		d(buf, tree, info)
	else
		info(name)
	end
	return buf:len()
end

local ip_proto = DissectorTable.get("ip.proto")
ip_proto:add(146, homa)

-- TCP-hijacked Homa: protocol 6 with the hijack markers. The TCP
-- dissector runs first, then Homa on the same bytes.
local tcp = ip_proto:get_dissector(6)
local hijacked = Proto("homa_hijacked", "Homa (TCP-hijacked)")
function hijacked.dissector(buf, pinfo, root)
	local n = tcp and tcp:call(buf, pinfo, root) or 0
	if buf:len() >= 28 and buf(13, 1):uint() == 6 and buf(18, 2):uint() == 0xb97d then
		return homa.dissector(buf, pinfo, root)
	end
	return n
end
if tcp then
	ip_proto:add(6, hijacked)
end
