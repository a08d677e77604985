-- Wireshark dissector for efarm's packet captures (EFARM_CAPTURE): pcap files
-- of link type USER0 (147) whose records are efarm's 40-byte capture header
-- (big-endian) and then one EFA RDM protocol v4 packet as it crossed the wire.
--
--   tshark -X lua_script:/usr/local/share/efarm/wireshark/efarm.lua -r capture.pcap
--   wireshark -X lua_script:.../efarm.lua capture.pcap
--
-- or copy efarm.lua and efarm_v4.lua into ~/.local/lib/wireshark/plugins/.
-- The packet types and their fixed fields come from efarm_v4.lua, which is
-- generated from efarm's own packet table (`make config-gen`) and must sit in
-- the same directory. Display filters: efarm.type_name == "CTS",
-- efarm.dir == 1 (received), efarm.msg_id, efarm.tag, efarm.peer_qpn, ...

local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local v4 = dofile(here .. "efarm_v4.lua")

local efarm = Proto("efarm", "efarm capture: EFA RDM protocol v4")

local type_names = {}
for t, info in pairs(v4.types) do
    type_names[t] = info.name
end

local f = {
    cap_version = ProtoField.uint8("efarm.capture_version", "Capture header version"),
    dir = ProtoField.uint8("efarm.dir", "Direction", base.DEC, {[0] = "sent", [1] = "received"}),
    ep_qpn = ProtoField.uint32("efarm.ep_qpn", "Endpoint QPN"),
    peer_qpn = ProtoField.uint32("efarm.peer_qpn", "Peer QPN"),
    peer_index = ProtoField.uint32("efarm.peer_index", "Peer index (0xffffffff: unknown sender)"),
    peer_gid = ProtoField.ipv6("efarm.peer_gid", "Peer GID"),
    pid = ProtoField.uint32("efarm.pid", "Process id"),
    rank = ProtoField.int32("efarm.rank", "MPI rank (-1: none)"),
    type = ProtoField.uint8("efarm.type", "Packet type", base.DEC, type_names),
    type_name = ProtoField.string("efarm.type_name", "Packet type name"),
    version = ProtoField.uint8("efarm.version", "Protocol version"),
    flags = ProtoField.uint16("efarm.flags", "Flags", base.HEX),
    payload_length = ProtoField.uint32("efarm.payload_length", "Bytes after the mandatory header"),
}
for _, name in ipairs(v4.field_names) do
    f[name] = ProtoField.uint64("efarm." .. name, name)
end
local list = {}
for _, field in pairs(f) do
    list[#list + 1] = field
end
efarm.fields = list

function efarm.dissector(buf, pinfo, tree)
    if buf:len() < 40 then
        return 0
    end
    local hlen = buf(2, 2):uint()
    if buf(0, 1):uint() ~= 1 or hlen < 40 or hlen > buf:len() then
        return 0
    end
    pinfo.cols.protocol = "EFA-v4"
    local top = tree:add(efarm, buf(), "efarm capture")
    local cap = top:add(buf(0, hlen), "Capture header")
    cap:add(f.cap_version, buf(0, 1))
    cap:add(f.dir, buf(1, 1))
    cap:add(f.ep_qpn, buf(4, 4))
    cap:add(f.peer_qpn, buf(8, 4))
    cap:add(f.peer_index, buf(12, 4))
    cap:add(f.peer_gid, buf(16, 16))
    cap:add(f.pid, buf(32, 4))
    cap:add(f.rank, buf(36, 4))

    local pkt = buf(hlen):tvb()
    local dir = buf(1, 1):uint() == 1 and "rx" or "tx"
    if pkt:len() < 4 then
        pinfo.cols.info = dir .. " (packet shorter than the base header)"
        return buf:len()
    end
    local t = pkt(0, 1):uint()
    local info = v4.types[t]
    local name = info and info.name or ("unknown type " .. t)
    local body = top:add(pkt(), "Protocol v4 " .. name)
    body:add(f.type, pkt(0, 1))
    body:add(f.type_name, pkt(0, 1), name)
    body:add(f.version, pkt(1, 1))
    body:add_le(f.flags, pkt(2, 2))
    local summary = ""
    if info then
        for _, field in ipairs(info.fields) do
            local fname, off, width = field[1], field[2], field[3]
            if off + width <= pkt:len() then
                body:add_le(f[fname], pkt(off, width))
                if fname == "msg_id" or fname == "tag" or fname == "send_id" or fname == "recv_id" then
                    summary = summary .. " " .. fname .. "=" .. tostring(pkt(off, width):le_uint64())
                end
            end
        end
        if pkt:len() >= info.hdr then
            body:add(f.payload_length, pkt(0, 0), pkt:len() - info.hdr)
        end
    end
    pinfo.cols.info = string.format("%s %s QPN %d %s QPN %d, %d bytes%s", dir, name,
        buf(4, 4):uint(), dir == "tx" and "->" or "<-", buf(8, 4):uint(), pkt:len(), summary)
    return buf:len()
end

DissectorTable.get("wtap_encap"):add(wtap.USER0, efarm)
