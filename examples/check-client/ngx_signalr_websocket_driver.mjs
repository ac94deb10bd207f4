// A `wirecheck check-client` driver for ngx-signalr-websocket (npm, 1.3.0), a small RxJS client
// of the ASP.NET Core SignalR protocol written for Angular (its own code; it depends on rxjs only):
// the protocol's standard workload (docs/start/clients.md, "The client suite"), as far as this
// library can run it.
//
//   cd examples/check-client && npm install --no-audit --no-fund
//   wirecheck check-client --protocol signalr \
//       --client-command "node examples/check-client/ngx_signalr_websocket_driver.mjs {url} {count}"
//
// Negotiate and the WebSocket to the hub at URL (JSON hub protocol: the only one it has), then
// COUNT invocations of Echo("msg-N"), each result printed as `received <result>`; the stream
// Counter(COUNT, 0), each item printed as `received item-<item>`; then close().
//
// The upload to Sum is left out: the library has no client-to-server streams (invoke() and
// stream() send no `streamIds`; an Observable argument would only be serialized as JSON).
//
// What the library reports, and how it is passed on (`error ...` on stdout, exit status 1):
// - an error from connect() (negotiate failed, or no WebSockets/Text transport offered);
// - an error from the Observable of invoke() or stream(): a Completion with an error is thrown
//   as Error(error); a socket that closes before the answer completes the Observable empty
//   (rxjs's EmptyError "no elements in sequence") or errors it (a CloseEvent, printed as such);
// - a stream that ends early completes without error: the driver counts the items and says so.
// Every wait is bounded (WAIT_MS): a library that never settles is printed as `hung ...` (the
// kit's verdict: HANG). No process-wide handler is installed: an exception thrown inside the
// library ends the process with Node's uncaught-error exit, as it would in an application.
//
// Library notes (1.3.0 on Node 20): it is written for a browser. It resolves the hub URL
// against `window.location.href` and opens the socket with the global `WebSocket`; neither
// exists in Node 20, so the driver provides them as a Node application must: `window.location`
// set to the hub URL, and `WebSocket` from the `ws` package (pinned in ./package.json). It
// negotiates with `POST {url}/negotiate` (no negotiateVersion) through the global fetch and
// opens `{url}?id=<connectionId>`. The handshake goes out when the socket opens; there is no
// call that waits for its answer. It answers each server Ping with a Ping; after 30 s without a
// message it errors the socket itself. Its close() unsubscribes its keep-alive subscription,
// which sends a Close message (`{"type":7}`), then closes the socket.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { WebSocket } = require("ws");
const { firstValueFrom, lastValueFrom, toArray, tap } = require("rxjs");

const WAIT_MS = 20000;

const [url, countText] = process.argv.slice(2);
if (!url || !countText) {
  console.error("usage: ngx_signalr_websocket_driver.mjs URL COUNT");
  process.exit(2);
}
const count = Number(countText);

// The browser globals the library reads (see the header).
globalThis.window = { location: { href: url } };
globalThis.WebSocket = WebSocket;
const { SignalrClient, DefaultHttpPostClient } = require("ngx-signalr-websocket");

// The library never settled a promise: what an application would wait on for ever.
class LibraryHung extends Error {}

function bounded(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new LibraryHung(`${what} never came within ${WAIT_MS / 1000} s`)), WAIT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function printable(value) {
  return typeof value === "string" && /^[\x21-\x7e]+$/.test(value) ? value : `(other: ${JSON.stringify(value)})`;
}

async function workload() {
  const client = SignalrClient.create(new DefaultHttpPostClient());
  const connection = await bounded(firstValueFrom(client.connect(url)), "connect() (negotiate)");
  try {
    for (let i = 0; i < count; i++) {
      const result = await bounded(firstValueFrom(connection.invoke("Echo", `msg-${i}`)),
        `the result of Echo("msg-${i}")`);
      console.log(`received ${printable(result)}`);
    }

    const items = await bounded(lastValueFrom(connection.stream("Counter", count, 0).pipe(
      tap((item) => console.log(`received item-${printable(String(item))}`)),
      toArray(),
    )), `the end of the Counter(${count}, 0) stream`);
    if (items.length !== count) throw new Error(`Counter(${count}, 0) completed after ${items.length} item(s)`);
  } finally {
    connection.close();
  }
}

workload().then(
  () => process.exit(0),
  (err) => {
    if (err instanceof LibraryHung) {
      console.log(`hung ${err.message}`);
      process.exit(1);
    }
    // rxjs hands a socket's CloseEvent or ErrorEvent on as the error itself
    const name = err && err.name ? err.name : err && err.type ? `${err.type}Event` : "Error";
    const text = err && err.message ? err.message
      : err && err.code !== undefined ? `code ${err.code} ${err.reason || ""}` : String(err);
    console.log(`error ${name}: ${String(text).replace(/\s+/g, " ")}`);
    process.exit(1);
  },
);
