// The reference reads without JavaScript; this only adds a Copy button to each example.
"use strict";

function copyBySelection(target) {
  const range = document.createRange();
  range.selectNodeContents(target);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  try {
    return document.execCommand("copy");
  } catch (error) {
    return false;
  }
}

async function copyText(target) {
  const text = target.innerText;
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (error) {
      // fall through to the selection, which works on plain http too
    }
  }
  return copyBySelection(target);
}

document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    const target = document.querySelector(button.dataset.copy);
    if (!target) {
      continue;
    }
    button.hidden = false;
    button.addEventListener("click", async () => {
      const copied = await copyText(target);
      button.textContent = copied ? "Copied" : "Select and copy";
      window.setTimeout(() => { button.textContent = "Copy"; }, 2000);
    });
  }
});
