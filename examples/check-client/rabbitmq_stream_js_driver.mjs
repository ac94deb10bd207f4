// A `wirecheck check-client` driver for rabbitmq-stream-js-client (npm, pinned to 1.0.0 in
// ./package.json), RabbitMQ Stream's Node.js client: the protocol's standard workload
// (docs/start/clients.md, "The client suite").
//
//   cd examples/check-client && npm install --no-audit --no-fund
//   wirecheck check-client --protocol rabbitmq-stream \
//       --client-command "node examples/check-client/rabbitmq_stream_js_driver.mjs {host} {port} {count}"
//
// Connect (guest/guest), create the stream, declare a publisher, send COUNT messages `msg-0` ...
// and wait until every publishing id is confirmed, then declare a consumer from the first offset
// and print `received ID` for each message the library hands to the handler, until each came;
// then close the client.
//
// What the library reports, and how it is passed on (`error ...` on stdout, exit status 1):
// - a rejected promise (connect, createStream, declarePublisher, declareConsumer, close);
// - a publish error: the `publish_confirm` listener called with an error code;
// - `connection_closed`: the library's only signal that a connection ended without the
//   application asking. Its pending requests are not rejected then (a connect() cut during the
//   handshake never settles, seen under the `close` scenario), so the driver takes this
//   callback, before the workload is done, as the library's report of the end.
// Every wait is bounded (WAIT_MS): when the library never calls back, the driver prints
// `hung <what never came>` and exits 1 (the kit's verdict: HANG). No process-wide `uncaughtException` handler
// is installed: an exception thrown inside the library's own socket callbacks ends the process
// with Node's uncaught-error exit, as it would in an application.
//
// Library notes (1.0.0):
// - The client opens a "locator" connection, then a separate connection for the publisher and
//   another for the consumer, each to the node the Metadata answer names (here the kit's
//   address), so one run makes three connections.
// - send() only queues; flush() writes the batch. Confirms arrive on the publisher's
//   `publish_confirm` listener, which gets (errorCode | null, [publishingId ...]).
// - Tune: with `heartbeat` unset the client takes the server's heartbeat interval; the default is
//   kept.
// - On a MetadataUpdate for the stream, the library itself closes that stream's publishers and
//   consumers (a consumer: its `connectionClosedListener(false)`; a publisher: by releasing its
//   connection, whose end then calls the listener). A MetadataUpdate that arrives before
//   declarePublisher() has registered the publisher for it goes unnoticed, so which one reports
//   first varies from run to run.
// - The server's Close (command 22) is not a command 1.0.0 knows: its decoder throws
//   `Unknown response 22` from the socket's data callback, an uncaught exception, so the
//   process dies without answering (no CloseResponse). The driver leaves that visible.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const rabbit = require("rabbitmq-stream-js-client");

const STREAM = "wirecheck-workload";
const WAIT_MS = 20000;

const [host, portText, countText] = process.argv.slice(2);
if (!host || !portText || !countText) {
  console.error("usage: rabbitmq_stream_js_driver.mjs HOST PORT COUNT");
  process.exit(2);
}
const port = Number(portText);
const count = Number(countText);

// The library's own log lines, warnings and errors only, go to stderr (the kit reads stdout).
const logger = {
  debug() {},
  info() {},
  warn(message) { console.error(`[rabbitmq-stream-js-client warn] ${message}`); },
  error(message) { console.error(`[rabbitmq-stream-js-client error] ${message}`); },
};

// A rejection the workload can await beside each step: set when the library reports that a
// connection ended while the workload still needed it.
let reportClosed;
const closedReport = new Promise((_, reject) => { reportClosed = reject; });
closedReport.catch(() => {});
let workloadDone = false;
function onConnectionClosed(which) {
  return (hadError) => {
    if (!workloadDone) reportClosed(new Error(`connection_closed (${which}, hadError=${hadError})`));
  };
}

// The library never settled a promise nor called back: what an application would wait on for ever.
class LibraryHung extends Error {}

function bounded(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new LibraryHung(`${what} never came within ${WAIT_MS / 1000} s`)), WAIT_MS);
  });
  return Promise.race([closedReport, promise, timeout]).finally(() => clearTimeout(timer));
}

async function workload() {
  const client = await bounded(rabbit.connect({
    hostname: host,
    port,
    username: "guest",
    password: "guest",
    vhost: "/",
    listeners: { connection_closed: onConnectionClosed("locator") },
  }, logger), "connect (handshake answered)");

  await bounded(client.createStream({ stream: STREAM, arguments: {} }), "createStream answered");

  const publisher = await bounded(client.declarePublisher({
    stream: STREAM,
    connectionClosedListener: onConnectionClosed("publisher"),
  }), "declarePublisher answered");
  const unconfirmed = new Set();
  let confirmError = null;
  let allConfirmed;
  const confirmed = new Promise((resolve, reject) => {
    allConfirmed = resolve;
    confirmError = reject;
  });
  publisher.on("publish_confirm", (err, ids) => {
    if (err !== null && err !== undefined) {
      confirmError(new Error(`publish error code ${err} for publishing ids ${ids.join(",")}`));
      return;
    }
    for (const id of ids) unconfirmed.delete(BigInt(id));
    if (unconfirmed.size === 0) allConfirmed();
  });
  for (let i = 0; i < count; i++) {
    const result = await bounded(publisher.send(Buffer.from(`msg-${i}`)), `send msg-${i}`);
    unconfirmed.add(BigInt(result.publishingId));
  }
  const flushed = await bounded(publisher.flush(), "flush");
  if (flushed === false) throw new Error("flush reported failure");
  if (unconfirmed.size === 0) allConfirmed();
  await bounded(confirmed, `publish confirms (${unconfirmed.size} of ${count} outstanding)`);

  const wanted = new Set(Array.from({ length: count }, (_, i) => `msg-${i}`));
  let allDelivered;
  const delivered = new Promise((resolve) => { allDelivered = resolve; });
  if (wanted.size === 0) allDelivered();
  await bounded(client.declareConsumer({
    stream: STREAM,
    offset: rabbit.Offset.first(),
    connectionClosedListener: onConnectionClosed("consumer"),
  }, (message) => {
    const name = Buffer.from(message.content).toString("latin1");
    console.log(`received ${name}`);
    wanted.delete(name);
    if (wanted.size === 0) allDelivered();
  }), "declareConsumer answered");
  await bounded(delivered, `deliveries (${count} messages; the rest never came)`);

  workloadDone = true;
  await bounded(client.close(), "close answered");
}

workload().then(
  () => process.exit(0),
  (err) => {
    const text = err && err.message ? err.message : String(err);
    if (err instanceof LibraryHung) {
      console.log(`hung ${err.message}`);
      process.exit(1);
    }
    console.log(`error ${err && err.name ? err.name : "Error"}: ${text.replace(/\s+/g, " ")}`);
    process.exit(1);
  },
);
