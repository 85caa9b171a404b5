// fpscanner (pinned in tests/js): collectFingerprint({encrypt: false}) gives
// fastBotDetectionDetails, one {detected, severity} per rule. Our flags: the rules detected.
import FingerprintScanner from "/npm/fpscanner/dist/fpScanner.es.js";
import { publish, failed } from "/assets/verdict.js";

try {
  const fingerprint = await new FingerprintScanner().collectFingerprint({ encrypt: false });
  const details = fingerprint.fastBotDetectionDetails || {};
  const flags = Object.keys(details).filter((rule) => details[rule] && details[rule].detected);
  await publish("fpscanner", {
    bot: Boolean(fingerprint.fastBotDetection),
    flags,
    fsid: fingerprint.fsid,
  });
} catch (error) {
  await failed("fpscanner", error);
}
