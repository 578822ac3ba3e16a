#!/usr/bin/env python3
"""Records what a replayd answers a client of protocol 2.0, as Tests/Transcripts/client-2.0.jsonl.

    record-transcript.py SOCKET > Tests/Transcripts/client-2.0.jsonl

The requests are the 2.0 client's, byte for byte as the Swift client of 0.25.0 encoded them
(a connection that is not the person's `replay`: an app). Each line of the output is one step:
{"send": REQUEST}, {"receive": EVENT} or {"closed": true}. Values that differ from run to run
(pids, the display, the release, the words of error messages) are written as "*";
IntegrationTests.ProtocolGrowth replays the file against today's daemon and compares.
"""
import json, socket, struct, sys

REQUESTS = [
    '{"hello":{"protocolVersion":2,"client":"recorded-2.0-client"}}',
    '{"status":{}}',
    '{"watchCaptureState":{}}',
    '{"broadcastStatus":{}}',
    '{"clipStatus":{}}',
    '{"listRecordings":{}}',
    '{"discardRecording":{"id":"rec-20000101-000000-0000"}}',
    '{"pauseRecording":{}}',
    # Not a 2.0 request: a 2.0 client that sends one gets malformedRequest and is cut off, as in 2.0.
    '{"teleport":{"to":"mars"}}',
]
VARIABLE = {"daemonPID", "pid", "display", "version", "message"}


def wildcard(value):
    if isinstance(value, dict):
        return {k: ("*" if k in VARIABLE else wildcard(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [wildcard(v) for v in value]
    return value


def read_exactly(sock, count):
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def main():
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(sys.argv[1])
    sock.settimeout(5)
    out = sys.stdout
    for request in REQUESTS:
        body = request.encode()
        sock.sendall(struct.pack("<II", len(body), 0) + body)
        out.write(json.dumps({"send": json.loads(request)}, separators=(",", ":")) + "\n")
        # Every request of the list is answered by exactly one event.
        header = read_exactly(sock, 8)
        if header is None:
            out.write('{"closed":true}\n')
            return
        json_length, body_length = struct.unpack("<II", header)
        event = json.loads(read_exactly(sock, json_length))
        read_exactly(sock, body_length)
        out.write(json.dumps({"receive": wildcard(event)}, separators=(",", ":")) + "\n")
    try:
        closed = sock.recv(1) == b""
    except socket.timeout:
        closed = False
    if closed:
        out.write('{"closed":true}\n')


main()
