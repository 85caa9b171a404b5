// FingerprintJS BotD (@fingerprintjs/botd, pinned in tests/js): load(), detect() gives
// {bot, botKind}; getDetections() says which of its detectors fired. Our flags: those detectors.
import { load } from "/npm/@fingerprintjs/botd/dist/botd.esm.js";
import { publish, failed } from "/assets/verdict.js";

try {
  // monitoring off: it would call m1.openfpcdn.io, beyond 127.0.0.1
  const botd = await load({ monitoring: false });
  const result = botd.detect();
  const detections = botd.getDetections ? botd.getDetections() : {};
  const flags = Object.entries(detections)
    .filter(([, found]) => found && found.bot)
    .map(([name, found]) => name + (found.botKind ? ":" + found.botKind : ""));
  await publish("botd", { bot: result.bot, botKind: result.botKind || null, flags });
} catch (error) {
  await failed("botd", error);
}
