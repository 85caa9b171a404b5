// headless-detector (pinned in tests/js; a classic script that defines detectHeadless): its
// summary's detections and warnings, each with a checkId. Our flags: those checkIds.
import { publish, failed } from "/assets/verdict.js";

try {
  const results = await window.detectHeadless(false);
  const summary = results.summary;
  const flags = [...summary.detections, ...summary.warnings].map((found) => found.checkId);
  await publish("headless-detector", {
    score: results.isHeadless,
    classification: summary.classification,
    flags,
    cdpSignals: (results.cdpArtifacts && results.cdpArtifacts.signals) || [],
    uaPatterns: (results.userAgentFlags && results.userAgentFlags.matches) || [],
  });
} catch (error) {
  await failed("headless-detector", error);
}
