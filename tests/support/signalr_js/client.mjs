// The real @microsoft/signalr client (+ signalr-protocol-msgpack) against a hub, driven by
// tests/reference_impl/signalr/test_signalr_real_clients.py.
//
//   node client.mjs URL json|messagepack yes|no      (third argument: skipNegotiation)
//
// Runs Echo, Add, a server stream (Counter), a client stream (Sum), a fire-and-forget call
// (Remember, checked with Recall), an error (Fail), server-to-client calls (CallMe, and AskMe:
// a client result), then stop(). Prints one line "RESULT <json>" on stdout; exits non-zero on
// a failure ("ERROR <message>" on stdout). Every step is bounded by a timer.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const signalR = require("@microsoft/signalr");
const { MessagePackHubProtocol } = require("@microsoft/signalr-protocol-msgpack");

const [url, protocol, skip] = process.argv.slice(2);
const STEP_MS = 10000;

function bounded(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timeout: ${what}`)), STEP_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function main() {
  // skipNegotiation requires naming the transport; with negotiate the client picks it from
  // availableTransports, as in an application.
  const options = skip === "yes"
    ? { skipNegotiation: true, transport: signalR.HttpTransportType.WebSockets }
    : {};
  let builder = new signalR.HubConnectionBuilder()
    .withUrl(url, options)
    .configureLogging(signalR.LogLevel.Warning);
  if (protocol === "messagepack") builder = builder.withHubProtocol(new MessagePackHubProtocol());
  const connection = builder.build();
  const result = {};

  const called = new Promise((resolve) => connection.on("Hello", (arg) => resolve(arg)));
  connection.on("Double", (arg) => arg * 2);      // a client result (AskMe)
  let closedError = "not closed";
  const closed = new Promise((resolve) => connection.onclose((err) => {
    closedError = err ? String(err) : null;
    resolve();
  }));

  await bounded(connection.start(), "start");
  result.echo = await bounded(connection.invoke("Echo", "hello ✓"), "Echo");
  result.add = await bounded(connection.invoke("Add", 2, 3), "Add");

  result.counter = await bounded(new Promise((resolve, reject) => {
    const items = [];
    connection.stream("Counter", 5, 10).subscribe({
      next: (item) => items.push(item),
      complete: () => resolve(items),
      error: reject,
    });
  }), "Counter");

  const subject = new signalR.Subject();
  const sum = connection.invoke("Sum", subject);
  for (const n of [1, 2, 3, 4]) subject.next(n);
  subject.complete();
  result.sum = await bounded(sum, "Sum");

  await bounded(connection.send("Remember", "fire-and-forget"), "Remember");
  result.recall = await bounded(connection.invoke("Recall"), "Recall");

  try {
    await bounded(connection.invoke("Fail", "boom"), "Fail");
    result.fail = "no error";
  } catch (err) {
    result.fail = String(err.message);
  }

  await bounded(connection.invoke("CallMe", "Hello", 7), "CallMe");
  result.callme = await bounded(called, "Hello from the server");
  result.askme = await bounded(connection.invoke("AskMe", "Double", 21), "AskMe");

  await bounded(connection.stop(), "stop");
  await bounded(closed, "onclose");
  result.closed_error = closedError;
  result.state = connection.state;
  console.log("RESULT " + JSON.stringify(result));
}

main().then(
  () => process.exit(0),
  (err) => {
    console.log("ERROR " + String(err && err.stack ? err.stack : err));
    process.exit(1);
  },
);
