// The page's DOM helpers: elements built with textContent only (no HTML from data ever reaches the
// DOM), and VS Code-looking buttons that can be disabled for the mouse, the keyboard and the
// accessibility tree alike.
import '@vscode-elements/elements/dist/vscode-button/index.js';

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { class?: string; text?: string; title?: string; testid?: string } = {},
  ...children: Node[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (props.class) node.className = props.class;
  if (props.text !== undefined) node.textContent = props.text;
  if (props.title) node.title = props.title;
  if (props.testid) node.setAttribute('data-testid', props.testid);
  node.append(...children);
  return node;
}

export function button(label: string, onClick: () => void, secondary = false): HTMLElement {
  const b = document.createElement('vscode-button');
  b.textContent = label;
  if (secondary) b.setAttribute('secondary', '');
  // vscode-button still dispatches clicks while disabled: the guard is ours.
  b.addEventListener('click', () => {
    if (!b.hasAttribute('disabled')) onClick();
  });
  return b;
}

/** Enables or disables a button made by `button` (greyed, out of the tab order, aria-disabled). */
export function setEnabled(b: HTMLElement, enabled: boolean): void {
  b.toggleAttribute('disabled', !enabled);
  b.setAttribute('aria-disabled', String(!enabled));
}
