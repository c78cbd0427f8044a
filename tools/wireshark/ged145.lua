-- GED-145 (Cisco ICM application gateway) dissector for Wireshark and tshark.
--
--   tshark -X lua_script:tools/wireshark/ged145.lua -r capture.pcap                 (any port: heuristic)
--   tshark -X lua_script:tools/wireshark/ged145.lua -d tcp.port==5003,ged145 -r capture.pcap
--   tshark -X lua_script:tools/wireshark/ged145.lua -o ged145.port:5003 -r capture.pcap
--   Wireshark: copy to your personal plugins folder (Help > About > Folders), or start it with
--   -X lua_script:ged145.lua. Three ways to pick the traffic: the port preference (5000; Edit >
--   Preferences > Protocols > GED145), Decode As... > TCP port > GED145, or on any port the
--   heuristic (a known type, a sane length and fixed part: see looks_like_ged145 below).
--
-- Numbers follow docs/protocol.md of the ged145 project: 8-byte header (UINT32 body length, UINT32
-- type), big-endian, tags as UCHAR tag, UCHAR length, data. Types 5/6 = CLOSE, 7/8 = HEARTBEAT.

local ged145 = Proto("ged145", "GED-145 Application Gateway")

local MESSAGE_TYPES = {
  [1] = "FAILURE_CONF", [2] = "FAILURE_EVENT", [3] = "OPEN_REQ", [4] = "OPEN_CONF",
  [5] = "CLOSE_REQ", [6] = "CLOSE_CONF", [7] = "HEARTBEAT_REQ", [8] = "HEARTBEAT_CONF",
  [9] = "QUERY_REQ", [10] = "QUERY_RESP", [11] = "PARAM_REQ", [12] = "PARAM_CONF",
}
local STATUS = {
  [0] = "E_AG_NO_ERROR", [1] = "E_AG_INVALID_VERSION", [2] = "E_AG_SESSION_ACTIVE",
  [3] = "E_AG_HOST_OFFLINE", [4] = "E_AG_INVALID_MESSAGE", [5] = "E_AG_SESSION_INACTIVE",
  [6] = "E_AG_HOST_ERROR1", [7] = "E_AG_HOST_ERROR2", [8] = "E_AG_INVALID_KEY",
}
local TAGS = {
  [1] = "ERROR", [2] = "CONFIG", [3] = "SUBTYPE", [4] = "CED", [5] = "CLID", [6] = "CDPD",
  [7] = "ROUTING_CLIENT", [8] = "DN", [19] = "SESSION_KEY", [20] = "ECC", [21] = "ECC_ARRAY",
}
for n = 1, 10 do TAGS[8 + n] = "VAR" .. n end

local f = ged145.fields
f.length = ProtoField.uint32("ged145.length", "MessageLength", base.DEC)
f.type = ProtoField.uint32("ged145.type", "MessageType", base.DEC, MESSAGE_TYPES)
f.type_name = ProtoField.string("ged145.type_name", "Message")
f.invoke_id = ProtoField.uint32("ged145.invoke_id", "InvokeID", base.DEC)
f.status = ProtoField.uint32("ged145.status", "Status", base.DEC, STATUS)
f.version = ProtoField.uint32("ged145.version", "VersionNumber", base.DEC)
f.idle_timeout = ProtoField.uint32("ged145.idle_timeout", "IdleTimeout (ms)", base.DEC)
f.encryption = ProtoField.uint32("ged145.encryption", "Encryption", base.DEC)
f.router_call_day = ProtoField.uint32("ged145.router_call_day", "RouterCallDay", base.DEC)
f.router_call_key = ProtoField.uint32("ged145.router_call_key", "RouterCallKey", base.DEC)
f.flags = ProtoField.uint8("ged145.flags", "Flags", base.HEX)
f.duplicate = ProtoField.bool("ged145.flags.duplicate", "Duplicate", 8, nil, 0x01)
f.no_script_reply = ProtoField.bool("ged145.flags.no_script_reply", "NoScriptReply", 8, nil, 0x02)
f.param_id = ProtoField.uint32("ged145.param_id", "ParamID", base.DEC)
f.param_value = ProtoField.uint32("ged145.param_value", "ParamValue", base.DEC)
f.tag = ProtoField.uint8("ged145.tag", "Tag", base.DEC, TAGS)
f.tag_length = ProtoField.uint8("ged145.tag_length", "Tag length", base.DEC)
f.error = ProtoField.string("ged145.error", "ERROR")
f.config = ProtoField.string("ged145.config", "CONFIG (ConnectInfo)")
f.subtype = ProtoField.string("ged145.subtype", "SUBTYPE")
f.ced = ProtoField.string("ged145.ced", "CED")
f.clid = ProtoField.string("ged145.clid", "CLID")
f.cdpd = ProtoField.string("ged145.cdpd", "CDPD")
f.routing_client = ProtoField.string("ged145.routing_client", "ROUTING_CLIENT")
f.dn = ProtoField.string("ged145.dn", "DN")
local VAR_FIELDS = {}
for n = 1, 10 do
  VAR_FIELDS[n] = ProtoField.string("ged145.var" .. n, "VAR" .. n)
  f["var" .. n] = VAR_FIELDS[n]
end
f.session_key = ProtoField.bytes("ged145.session_key", "SESSION_KEY")
f.ecc_name = ProtoField.string("ged145.ecc.name", "ECC name")
f.ecc_value = ProtoField.string("ged145.ecc.value", "ECC value")
f.ecc_array_index = ProtoField.uint8("ged145.ecc_array.index", "ECC array index", base.DEC)
f.ecc_array_name = ProtoField.string("ged145.ecc_array.name", "ECC array name")
f.ecc_array_value = ProtoField.string("ged145.ecc_array.value", "ECC array value")
f.unknown_tag = ProtoField.bytes("ged145.unknown_tag", "Unknown tag data")
f.trailing = ProtoField.bytes("ged145.trailing", "Trailing bytes")

local ef = ged145.experts
ef.too_large = ProtoExpert.new("ged145.too_large", "MessageLength over the limit (the host closes the connection)", expert.group.MALFORMED, expert.severity.ERROR)
ef.unknown_type = ProtoExpert.new("ged145.unknown_type", "Unknown MessageType", expert.group.MALFORMED, expert.severity.ERROR)
ef.truncated = ProtoExpert.new("ged145.truncated", "Body shorter than the fixed part", expert.group.MALFORMED, expert.severity.ERROR)
ef.tag_overrun = ProtoExpert.new("ged145.tag_overrun", "Tag length runs past the end of the body", expert.group.MALFORMED, expert.severity.ERROR)
ef.dangling = ProtoExpert.new("ged145.dangling", "Dangling byte where a tag header should be", expert.group.MALFORMED, expert.severity.ERROR)
ef.bad_ecc = ProtoExpert.new("ged145.bad_ecc", "ECC tag without its NUL-terminated layout", expert.group.MALFORMED, expert.severity.ERROR)

ged145.prefs.port = Pref.uint("TCP port", 5000, "TCP port of the GED-145 host")
ged145.prefs.max_length = Pref.uint("Maximum MessageLength", 8192, "Longer messages are flagged as malformed")

-- The protocol compatibility profile, as the gateway's `protocol` config section has it: the
-- number on the wire of each message type and status code (ours by default). A router that
-- numbers them otherwise is read right by setting these, e.g. -o ged145.type_heartbeat_req:5.
local CANON_TYPES, CANON_STATUS = {}, {}
for n, name in pairs(MESSAGE_TYPES) do
  CANON_TYPES[n] = name
  ged145.prefs["type_" .. string.lower(name)] = Pref.uint("MessageType " .. name, n, "Wire number of " .. name)
end
for n, name in pairs(STATUS) do
  CANON_STATUS[n] = name
  ged145.prefs["status_" .. string.lower(name)] = Pref.uint("Status " .. name, n, "Wire number of " .. name)
end

-- name, fixed fields (each: field, size), whether tags follow
local LAYOUTS = {
  [1] = { { f.invoke_id, 4 }, { f.status, 4 }, tags = true },
  [2] = { { f.status, 4 }, tags = true },
  [3] = { { f.invoke_id, 4 }, { f.version, 4 }, { f.idle_timeout, 4 }, { f.encryption, 4 }, tags = true },
  [4] = { { f.invoke_id, 4 } },
  [5] = { { f.invoke_id, 4 } },
  [6] = { { f.invoke_id, 4 } },
  [7] = { { f.invoke_id, 4 } },
  [8] = { { f.invoke_id, 4 } },
  [9] = { { f.invoke_id, 4 }, { f.router_call_day, 4 }, { f.router_call_key, 4 }, { f.flags, 1 }, tags = true },
  [10] = { { f.invoke_id, 4 }, { f.status, 4 }, tags = true },
  [11] = { { f.invoke_id, 4 }, { f.param_id, 4 }, { f.param_value, 4 } },
  [12] = { { f.invoke_id, 4 } },
}

-- Tables keyed by wire number, rebuilt from the preferences (tables are refilled in place).
local CANON_LAYOUTS = {}
for n, layout in pairs(LAYOUTS) do CANON_LAYOUTS[n] = layout end
local function refill(t, src)
  for k in pairs(t) do t[k] = nil end
  for k, v in pairs(src) do t[k] = v end
end
local function apply_profile()
  local types, layouts, status = {}, {}, {}
  for n, name in pairs(CANON_TYPES) do
    local wire = ged145.prefs["type_" .. string.lower(name)]
    types[wire] = name
    layouts[wire] = CANON_LAYOUTS[n]
  end
  for _, name in pairs(CANON_STATUS) do status[ged145.prefs["status_" .. string.lower(name)]] = name end
  refill(MESSAGE_TYPES, types)
  refill(LAYOUTS, layouts)
  refill(STATUS, status)
end

local SCALAR_TAGS = { [1] = f.error, [2] = f.config, [3] = f.subtype, [4] = f.ced, [5] = f.clid,
  [6] = f.cdpd, [7] = f.routing_client, [8] = f.dn }
for n = 1, 10 do SCALAR_TAGS[8 + n] = VAR_FIELDS[n] end

-- Text without trailing NULs (scalar tags arrive with or without one).
local function text(tvb)
  local s = tvb:raw()
  return (s:gsub("%z+$", ""))
end

-- Index (0-based, relative to the range) of the first NUL at or after `from`, or nil.
local function nul_at(range, from)
  for i = from, range:len() - 1 do
    if range(i, 1):uint() == 0 then return i end
  end
  return nil
end

local function dissect_ecc(range, tree)
  local pos = 0
  if range:len() == 0 then tree:add_proto_expert_info(ef.bad_ecc); return end
  while pos < range:len() do
    local name_end = nul_at(range, pos)
    local value_end = name_end and nul_at(range, name_end + 1)
    if not value_end or name_end == pos then
      tree:add_proto_expert_info(ef.bad_ecc)
      return
    end
    tree:add(f.ecc_name, range(pos, name_end - pos), range(pos, name_end - pos):string())
    tree:add(f.ecc_value, range(name_end + 1, value_end - name_end - 1 > 0 and value_end - name_end - 1 or 0), range:raw(name_end + 1, value_end - name_end - 1))
    pos = value_end + 1
  end
end

local function dissect_ecc_array(range, tree)
  local name_end = range:len() > 1 and nul_at(range, 1) or nil
  local value_end = name_end and nul_at(range, name_end + 1)
  if not name_end or name_end <= 1 or value_end ~= range:len() - 1 then
    tree:add_proto_expert_info(ef.bad_ecc)
    return
  end
  tree:add(f.ecc_array_index, range(0, 1))
  tree:add(f.ecc_array_name, range(1, name_end - 1), range(1, name_end - 1):string())
  tree:add(f.ecc_array_value, range(name_end + 1, value_end - name_end - 1 > 0 and value_end - name_end - 1 or 0), range:raw(name_end + 1, value_end - name_end - 1))
end

local function dissect_tags(tvb, offset, stop, tree)
  local summary = {}
  while offset < stop do
    if stop - offset < 2 then
      tree:add(f.trailing, tvb(offset, stop - offset)):add_proto_expert_info(ef.dangling)
      return summary
    end
    local id = tvb(offset, 1):uint()
    local len = tvb(offset + 1, 1):uint()
    local avail = stop - offset - 2
    local name = TAGS[id] or ("tag " .. id)
    local sub = tree:add(ged145, tvb(offset, math.min(len, avail) + 2), name)
    sub:add(f.tag, tvb(offset, 1))
    sub:add(f.tag_length, tvb(offset + 1, 1))
    if len > avail then
      sub:add_proto_expert_info(ef.tag_overrun)
      return summary
    end
    if len > 0 or SCALAR_TAGS[id] then
      local data = len > 0 and tvb(offset + 2, len) or nil
      if SCALAR_TAGS[id] then
        local value = data and text(data) or ""
        if data then sub:add(SCALAR_TAGS[id], data, value) else sub:add(SCALAR_TAGS[id], tvb(offset + 1, 0), "") end
        sub:append_text(": " .. value)
        if id == 3 then summary[#summary + 1] = value end
      elseif id == 19 then
        sub:add(f.session_key, data)
      elseif id == 20 then
        dissect_ecc(data, sub)
      elseif id == 21 then
        dissect_ecc_array(data, sub)
      else
        sub:add(f.unknown_tag, data)
      end
    end
    offset = offset + 2 + len
  end
  return summary
end

local function message_length(tvb, pinfo, offset)
  local len = tvb(offset, 4):uint()
  if len > ged145.prefs.max_length then
    -- The host closes the connection here; take the rest of the segment as one bad message.
    return tvb:len() - offset
  end
  return len + 8
end

local function dissect_message(tvb, pinfo, tree)
  local len = tvb(0, 4):uint()
  local type_id = tvb(4, 4):uint()
  local name = MESSAGE_TYPES[type_id] or ("type " .. type_id)
  local root = tree:add(ged145, tvb(), "GED-145 " .. name)
  root:add(f.length, tvb(0, 4))
  root:add(f.type, tvb(4, 4))
  root:add(f.type_name, tvb(4, 4), name)
  pinfo.cols.protocol = "GED145"
  local info = name
  if len > ged145.prefs.max_length then
    root:add_proto_expert_info(ef.too_large)
    pinfo.cols.info:append(name .. " [length " .. len .. " over the limit] ")
    return tvb:len()
  end
  local layout = LAYOUTS[type_id]
  if not layout then
    root:add_proto_expert_info(ef.unknown_type)
    if len >= 4 then root:add(f.invoke_id, tvb(8, 4)) end
    pinfo.cols.info:append(name .. " [unknown type] ")
    return len + 8
  end
  local need = 0
  for _, fld in ipairs(layout) do need = need + fld[2] end
  if len < need then
    root:add_proto_expert_info(ef.truncated)
    if len >= 4 and MESSAGE_TYPES[type_id] ~= "FAILURE_EVENT" then root:add(f.invoke_id, tvb(8, 4)) end
    pinfo.cols.info:append(name .. " [truncated] ")
    return len + 8
  end
  local offset = 8
  for _, fld in ipairs(layout) do
    local item = root:add(fld[1], tvb(offset, fld[2]))
    if fld[1] == f.flags then
      item:add(f.duplicate, tvb(offset, 1))
      item:add(f.no_script_reply, tvb(offset, 1))
    end
    if fld[1] == f.invoke_id then info = info .. " id=" .. tvb(offset, 4):uint() end
    if fld[1] == f.status then info = info .. " " .. (STATUS[tvb(offset, 4):uint()] or tvb(offset, 4):uint()) end
    offset = offset + fld[2]
  end
  if layout.tags then
    local subtypes = dissect_tags(tvb, offset, len + 8, root)
    if #subtypes > 0 then info = info .. " " .. table.concat(subtypes, ",") end
  elseif offset < len + 8 then
    root:add(f.trailing, tvb(offset, len + 8 - offset))
  end
  pinfo.cols.info:append(info .. " ")
  return len + 8
end

function ged145.dissector(tvb, pinfo, tree)
  pinfo.cols.info:clear()
  dissect_tcp_pdus(tvb, tree, 8, message_length, dissect_message, true)
  return tvb:len()
end

-- The preferred port (Preferences > Protocols > GED145 > TCP port, or -o ged145.port:N).
local current_port = 0
function ged145.prefs_changed()
  apply_profile()
end
function ged145.init()
  apply_profile()
  local tcp = DissectorTable.get("tcp.port")
  if current_port ~= 0 then tcp:remove(current_port, ged145) end
  current_port = ged145.prefs.port
  tcp:add(current_port, ged145)
end

-- Decode As... > TCP port > GED145, and tshark -d tcp.port==N,ged145: offered at load time.
DissectorTable.get("tcp.port"):add_for_decode_as(ged145)

-- On any other port: a TCP payload that starts like a GED-145 message is taken as one, and the
-- whole conversation with it. The test: a known message type, a MessageLength within the limit
-- and at least the fixed part of that type, and nothing in the fixed part that no real message
-- has (a Status beyond the table, a Flags byte beyond its bits, Encryption other than 0 or 1).
local function looks_like_ged145(tvb)
  if tvb:len() < 8 then return false end
  local len = tvb(0, 4):uint()
  local type_id = tvb(4, 4):uint()
  local layout = LAYOUTS[type_id]
  if not layout or len > ged145.prefs.max_length then return false end
  local need = 0
  for _, fld in ipairs(layout) do need = need + fld[2] end
  if len < need then return false end
  if (not layout.tags) and len > need + 4 then return false end -- a fixed-only message (CLOSE_REQ may carry a Status word)
  local offset = 8
  for _, fld in ipairs(layout) do
    if offset + fld[2] > tvb:len() then break end
    local v = tvb(offset, fld[2]):uint()
    if fld[1] == f.status and STATUS[v] == nil then return false end
    if fld[1] == f.encryption and v > 1 then return false end
    if fld[1] == f.flags and v > 3 then return false end
    offset = offset + fld[2]
  end
  return true
end

local function heuristic(tvb, pinfo, tree)
  if not looks_like_ged145(tvb) then return false end
  pinfo.conversation = ged145
  ged145.dissector(tvb, pinfo, tree)
  return true
end
ged145:register_heuristic("tcp", heuristic)
