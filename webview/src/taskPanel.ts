// The Task section: a prompt box (Ctrl/Cmd+Enter runs), the model picker, Run, "Run demo task" and
// Stop, a status line, and the transcript of the current or last run (transcript.ts). The host owns
// what must outlive the page (the run, its transcript, the model last used); the page keeps only the
// draft of the prompt, through the persisted view state.
import { MAX_PROMPT_CHARS, type ModelChoice, type RuntimeEvent, type WebviewMessage } from '../../protocol/messages';
import { collapsible } from './collapsible';
import { button, el, setEnabled } from './dom';
import { transcriptView } from './transcript';

export function taskPanel(options: { post(message: WebviewMessage): void; draft: string; onDraft(text: string): void }) {
  const prompt = el('textarea', { class: 'prompt', testid: 'task-prompt' });
  prompt.id = 'task-prompt';
  prompt.rows = 4;
  prompt.maxLength = MAX_PROMPT_CHARS;
  prompt.placeholder = 'What should the agent do?';
  prompt.value = options.draft;
  const mac = /Mac|iPhone|iPad/.test(navigator.platform);
  const hint = el('span', { class: 'muted hint', text: `${mac ? '⌘' : 'Ctrl'}+Enter runs` });
  hint.id = 'task-prompt-hint';
  prompt.setAttribute('aria-describedby', hint.id);
  const promptLabel = el('label', { class: 'label', text: 'Prompt' });
  promptLabel.htmlFor = prompt.id;

  // A native <select>, like the Trace filter: complete for the keyboard and screen readers.
  const model = el('select', { class: 'dropdown', testid: 'task-model', title: 'The model that runs the task' });
  model.id = 'task-model';
  const modelLabel = el('label', { class: 'label', text: 'Model' });
  modelLabel.htmlFor = model.id;

  const run = button('Run', start);
  run.setAttribute('aria-label', 'Run the prompt');
  const demo = button('Run demo task', () => options.post({ type: 'runDemo' }), true);
  const stop = button(
    'Stop',
    () => {
      status.textContent = 'Stopping…';
      options.post({ type: 'stopTask' });
    },
    true,
  );
  stop.setAttribute('aria-label', 'Stop the running task');

  const status = el('p', { class: 'muted', testid: 'task-status' });
  status.setAttribute('role', 'status');
  const transcript = transcriptView();

  const folding = collapsible(
    'task',
    'Task',
    { class: 'task-section', testid: 'task' },
    el('div', { class: 'prompt-head' }, promptLabel, hint),
    prompt,
    el('div', { class: 'row filter' }, modelLabel, model),
    el('div', { class: 'actions' }, run, demo, stop),
    status,
    transcript.element,
  );

  let running = false;
  let lastEnd: string | undefined;

  function start(): void {
    const text = prompt.value.trim();
    if (running || !text || !model.value) return;
    options.post({ type: 'startTask', prompt: text, model: model.value });
  }

  function update(): void {
    setEnabled(run, !running && prompt.value.trim() !== '' && model.value !== '');
    setEnabled(demo, !running);
    setEnabled(stop, running);
  }

  prompt.addEventListener('input', () => {
    options.onDraft(prompt.value);
    update();
  });
  prompt.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      start();
    }
  });
  update();

  return {
    section: folding.section,
    folding,
    setModels(choices: ModelChoice[], selected: string): void {
      // Keep what the reader picked if it is still offered; else the host's choice.
      const keep = choices.some((c) => c.id === model.value) ? model.value : selected;
      model.replaceChildren(
        ...choices.map((c) => {
          const o = el('option', { text: c.label, title: c.detail ? `${c.id}: ${c.detail}` : c.id });
          o.value = c.id;
          return o;
        }),
      );
      model.value = keep;
      update();
    },
    setTranscript(events: RuntimeEvent[]): void {
      transcript.replace(events);
      const ended = [...events].reverse().find((e) => e.type === 'taskEnded');
      lastEnd = ended?.type === 'taskEnded' ? ended.status : undefined;
    },
    append(event: RuntimeEvent): void {
      transcript.append(event);
      if (event.type === 'taskEnded') lastEnd = event.status;
    },
    setState(isRunning: boolean, error?: string): void {
      const focused = document.activeElement;
      const was = running;
      running = isRunning;
      update();
      status.classList.toggle('error', error !== undefined);
      if (error !== undefined) status.textContent = `The task did not start: ${error}`;
      else if (running) status.textContent = 'Running…';
      else status.textContent = lastEnd ? `Last task ended: ${lastEnd}` : '';
      // A button that becomes disabled drops the keyboard focus: hand it to the one that matters now.
      if (!was && running && (focused === run || focused === demo)) stop.focus();
      if (was && !running && focused === stop) demo.focus();
    },
  };
}
