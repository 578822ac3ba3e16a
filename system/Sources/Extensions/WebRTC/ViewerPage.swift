
/// The page local viewers open: a WHEP client (RFC-style: POST the offer, 201 with the
/// answer and a Location, DELETE it when leaving) playing the broadcast in a <video>.
/// `window.viewer` exposes the connection for tests and the latency bench.
enum ViewerPage {
    /// The page; `base` is the path every request of it goes to (`/<token>/`), so it works
    /// whether or not the address it was opened at ends with a slash.
    static func html(base: String) -> String { template.replacing("{{BASE}}", with: base) }

    private static let template = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Live broadcast</title>
        <style>
          body { margin: 0; background: #111; color: #ddd; font: 14px system-ui, sans-serif; }
          video { display: block; width: 100vw; max-height: calc(100vh - 2em); background: #000; }
          #status { padding: 0.3em 0.6em; }
        </style>
        </head>
        <body>
        <video id="video" autoplay muted playsinline controls></video>
        <div id="status">Connecting…</div>
        <script>
        "use strict";
        const video = document.getElementById('video');
        const status = document.getElementById('status');
        const viewer = window.viewer = { pc: null, resource: null, state: 'connecting', error: null };

        function gathered(pc) {
          if (pc.iceGatheringState === 'complete') return Promise.resolve();
          return new Promise(resolve => {
            const done = () => { if (pc.iceGatheringState === 'complete') resolve(); };
            pc.addEventListener('icegatheringstatechange', done);
            setTimeout(resolve, 2000);  // send what was gathered so far
          });
        }

        async function watch() {
          const pc = viewer.pc = new RTCPeerConnection();
          pc.addTransceiver('video', { direction: 'recvonly' });
          pc.addTransceiver('audio', { direction: 'recvonly' });
          const stream = new MediaStream();
          video.srcObject = stream;
          pc.ontrack = event => { stream.addTrack(event.track); };
          pc.onconnectionstatechange = () => {
            viewer.state = pc.connectionState;
            status.textContent = pc.connectionState === 'connected' ? 'Live' : 'Connection ' + pc.connectionState;
          };
          await pc.setLocalDescription(await pc.createOffer());
          await gathered(pc);
          const response = await fetch('{{BASE}}whep', { method: 'POST', headers: { 'Content-Type': 'application/sdp' },
                                                  body: pc.localDescription.sdp });
          if (response.status !== 201) throw new Error('the broadcast answered ' + response.status + ': ' + await response.text());
          viewer.resource = new URL(response.headers.get('Location'), location.href).href;
          await pc.setRemoteDescription({ type: 'answer', sdp: await response.text() });
        }

        function leave() {
          if (viewer.resource) fetch(viewer.resource, { method: 'DELETE', keepalive: true });
          viewer.resource = null;
          if (viewer.pc) viewer.pc.close();
        }
        window.addEventListener('pagehide', leave);
        watch().catch(error => {
          viewer.state = 'failed';
          viewer.error = String(error && error.message || error);
          status.textContent = viewer.error;
        });
        </script>
        </body>
        </html>
        """
}
