// The dashboard works without JavaScript; this only adds the copy button next to a new API key.
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
  const text = target.textContent.trim();
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
    const status = button.parentElement.querySelector(".copied");
    button.hidden = false;
    button.addEventListener("click", async () => {
      const copied = await copyText(target);
      if (status) {
        status.textContent = copied ? "Copied to the clipboard." : "Select the key and copy it.";
      }
      button.textContent = copied ? "Copied" : "Copy";
    });
  }
});
