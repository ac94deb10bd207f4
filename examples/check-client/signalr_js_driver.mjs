// A `wirecheck check-client` driver for @microsoft/signalr (npm, pinned to 10.0.11 in
// ./package.json), the ASP.NET Core SignalR JavaScript client: the protocol's standard workload
// (docs/start/clients.md, "The client suite").
//
//   cd examples/check-client && npm install --no-audit --no-fund
//   wirecheck check-client --protocol signalr \
//       --client-command "node examples/check-client/signalr_js_driver.mjs {url} {count}"
//
// Negotiate and the WebSocket to the hub at URL (JSON hub protocol), then COUNT invocations of
// Echo("msg-N"), each result printed as `received <result>`; the stream Counter(COUNT, 0), each
// item printed as `received item-<item>`; an upload of 0 .. COUNT-1 through a Subject to Sum,
// whose answer must be their sum; then stop().
//
// What the library reports, and how it is passed on (`error ...` on stdout, exit status 1):
// - a rejected promise: start(), invoke() (a Completion with an error is a HubError; a
//   connection that ends first cancels the call), stop();
// - a stream's `error` callback;
// - onclose(error) before stop() was asked for: the connection ended under the workload.
// Every wait is bounded (WAIT_MS): when the library never settles a promise or never calls back,
// the driver prints `hung <what never came>` and exits 1 (the kit's verdict: HANG). No process-wide
// `uncaughtException` handler is installed: an exception thrown inside the library's callbacks
// ends the process with Node's uncaught-error exit, as it would in an application.
//
// Library notes (10.0.11 on Node 20): nothing is needed to connect. On Node the client takes
// `ws` for the WebSocket and its own fetch-based HTTP client for negotiate (both dependencies
// of the package). Its logger writes Information and Debug with console.log, on stdout; it is
// set to Warning so that stdout carries only the driver's lines (warnings and errors go to
// stderr). No automatic reconnect is configured: the workload is one connection.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const signalR = require("@microsoft/signalr");

const WAIT_MS = 20000;

const [url, countText] = process.argv.slice(2);
if (!url || !countText) {
  console.error("usage: signalr_js_driver.mjs URL COUNT");
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

  const subject = new signalR.Subject();
  const total = connection.invoke("Sum", subject);
  for (let i = 0; i < count; i++) subject.next(i);
  subject.complete();
  const got = await bounded(total, "the Completion of Sum");
  const want = (count * (count - 1)) / 2;
  if (got !== want) throw new Error(`Sum answered ${JSON.stringify(got)}, not ${want}`);

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
