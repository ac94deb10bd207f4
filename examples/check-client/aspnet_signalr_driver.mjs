// A `wirecheck check-client` driver for @aspnet/signalr (npm, pinned to 1.1.4 in ./package.json),
// the ASP.NET Core 2.x SignalR JavaScript client, still in use in older applications: the
// protocol's standard workload (docs/start/clients.md, "The client suite"), as far as this
// library can run it.
//
//   cd examples/check-client && npm install --no-audit --no-fund
//   wirecheck check-client --protocol signalr \
//       --client-command "node examples/check-client/aspnet_signalr_driver.mjs {url} {count}"
//
// Negotiate and the WebSocket to the hub at URL (JSON hub protocol), then COUNT invocations of
// Echo("msg-N"), each result printed as `received <result>`; the stream Counter(COUNT, 0), each
// item printed as `received item-<item>`; then stop().
//
// The upload to Sum is left out: 1.x has no client-to-server streams (they came with ASP.NET
// Core 3.0 and @microsoft/signalr 3.x; 1.1.4 has no Subject to pass to invoke(), and sends no
// `streamIds`). An argument it cannot stream would only be serialized as JSON, a different call.
//
// What the library reports, and how it is passed on (`error ...` on stdout, exit status 1):
// - a rejected promise: start(), invoke() (a Completion with an error rejects it; a connection
//   that ends first rejects it too);
// - a stream's `error` callback;
// - onclose(error) before stop() was asked for: the connection ended under the workload.
// Every wait is bounded (WAIT_MS): when the library never settles a promise or never calls back,
// the driver prints `hung <what never came>` and exits 1 (the kit's verdict: HANG). No process-wide
// `uncaughtException` handler is installed: an exception thrown inside the library's callbacks
// ends the process with Node's uncaught-error exit, as it would in an application.
//
// Library notes (1.1.4 on Node 20): nothing beyond the package's own dependencies is needed to
// connect. With no `window` it loads `ws` (6.x) for the WebSocket, `eventsource` (1.x, unused
// here) and `request` for negotiate (Node 20 has no XMLHttpRequest, and its global WebSocket
// needs --experimental-websocket, so neither is picked up). It negotiates the pre-versioning way
// (`POST {url}/negotiate`, no negotiateVersion) and opens `{url}?id=<connectionId>`. Its
// logger writes Information with console.info and Debug with console.log, both on stdout; it is
// set to Warning so that stdout carries only the driver's lines. Its stop() sends no SignalR
// Close (1.x clients never send one): it closes the WebSocket and calls onclose itself; the
// driver waits for both.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const signalR = require("@aspnet/signalr");

const WAIT_MS = 20000;

const [url, countText] = process.argv.slice(2);
if (!url || !countText) {
  console.error("usage: aspnet_signalr_driver.mjs URL COUNT");
  process.exit(2);
}
const count = Number(countText);

let stopping = false;
let reportClosed;
const closedReport = new Promise((_, reject) => { reportClosed = reject; });
closedReport.catch(() => {});

// The library never settled a promise nor called back: what an application would wait on for ever.
class LibraryHung extends Error {}

function bounded(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new LibraryHung(`${what} never came within ${WAIT_MS / 1000} s`)), WAIT_MS);
  });
  return Promise.race([closedReport, promise, timeout]).finally(() => clearTimeout(timer));
}

function printable(value) {
  return typeof value === "string" && /^[\x21-\x7e]+$/.test(value) ? value : `(other: ${JSON.stringify(value)})`;
}

async function workload() {
  const connection = new signalR.HubConnectionBuilder()
    .withUrl(url)
    .configureLogging(signalR.LogLevel.Warning)
    .build();
  let closed;
  const closedAfterStop = new Promise((resolve) => { closed = resolve; });
  connection.onclose((err) => {
    if (!stopping) {
      reportClosed(new Error(`onclose before stop(): ${err ? err.message || String(err) : "no error given"}`));
    }
    closed(err);
  });

  await bounded(connection.start(), "start() (negotiate, WebSocket, handshake)");

  for (let i = 0; i < count; i++) {
    const result = await bounded(connection.invoke("Echo", `msg-${i}`), `the Completion of Echo("msg-${i}")`);
    console.log(`received ${printable(result)}`);
  }

  let items = 0;
  await bounded(new Promise((resolve, reject) => {
    connection.stream("Counter", count, 0).subscribe({
      next: (item) => {
        items += 1;
        console.log(`received item-${printable(String(item))}`);
      },
      complete: () => resolve(),
      error: (err) => reject(err),
    });
  }), `the end of the Counter(${count}, 0) stream`);
  if (items !== count) throw new Error(`Counter(${count}, 0) completed after ${items} item(s)`);

  stopping = true;
  await bounded(connection.stop(), "stop()");
  const err = await bounded(closedAfterStop, "onclose after stop()");
  if (err) throw err;
}

workload().then(
  () => process.exit(0),
  (err) => {
    if (err instanceof LibraryHung) {
      console.log(`hung ${err.message}`);
      process.exit(1);
    }
    const name = err && err.name ? err.name : "Error";
    const text = err && err.message ? err.message : String(err);
    console.log(`error ${name}: ${text.replace(/\s+/g, " ")}`);
    process.exit(1);
  },
);
