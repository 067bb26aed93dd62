// A stand-in for the Flamenco 3 Manager's job compiler, to run job-type scripts under Node.
//
// It reproduces the contract job-type scripts see in Flamenco's Goja VM (internal/manager/job_compilers:
// scripts.go newGojaVM, author.go, js_globals.go, js_path.go): the globals print, alert, frameChunker,
// frameCount, formatTimestampLocal, shellSplit, author (Task, Command) and path (basename, dirname,
// join, stem); JOB_TYPE read as the job type, compileJob(job) called with a job whose settings are
// those submitted, job.addTask, task.addCommand and task.addDependency. Task defaults follow author.go
// (priority 50, a UUID per task; an empty name or type is an error). Beyond that it checks what a
// Worker would refuse: 'blender-render' and 'exec' commands need a non-empty string 'exe' and 'args'
// (and 'argsBefore') lists of strings, and every dependency must be a task of the job.
// It is NOT Flamenco: it was written from Flamenco's sources and documentation and has not been
// compared against a running Manager.
//
// Usage: node flamenco_harness.js compile SCRIPT.js < {"job": SubmittedJob, "created": ISO time}
//        node flamenco_harness.js chunk RANGE SIZE
// Prints JSON: {"job_type": ..., "settings": ..., "tasks": [...]} or {"error": "..."} (exit 1).
"use strict";

const fs = require("fs");
const vm = require("vm");
const crypto = require("crypto");
const posix = require("path").posix;

// --- js_globals.go: frame ranges ------------------------------------------------------------------

function invalidRange(range, message) {
    return new Error(`invalid range "${range}": ${message}`);
}

// Go's strconv.ParseInt after strings.TrimSpace: an optional sign and decimal digits only.
function parseInteger(text, range, part) {
    const trimmed = text.trim();
    if (!/^[+-]?\d+$/.test(trimmed)) {
        throw invalidRange(range, part);
    }
    return parseInt(trimmed, 10);
}

function frameRangeExplode(frameRange) {
    const frames = new Set();
    frameRange = frameRange.split("..").join("-");
    for (const part of frameRange.split(",")) {
        const startEnd = part.split("-");
        if (startEnd.length === 1) {
            frames.add(parseInteger(startEnd[0], frameRange, part));
        } else if (startEnd.length === 2) {
            const start = parseInteger(startEnd[0], frameRange, part);
            const end = parseInteger(startEnd[1], frameRange, part);
            for (let frame = start; frame <= end; frame++) {
                frames.add(frame);
            }
        } else {
            throw invalidRange(frameRange, part);
        }
    }
    return Array.from(frames).sort((a, b) => a - b);
}

function frameRangeMerge(frames) {
    const ranges = [];
    const appendRange = (from, to) => {
        if (from === to) {
            ranges.push(`${from}`);
        } else if (from + 1 === to) {
            ranges.push(`${from}`, `${to}`);
        } else {
            ranges.push(`${from}-${to}`);
        }
    };
    let start = frames[0];
    let previous = frames[0];
    for (const frame of frames) {
        if (frame > previous + 1) {
            appendRange(start, previous);
            start = frame;
        }
        previous = frame;
    }
    appendRange(start, frames[frames.length - 1]);
    return ranges.join(",");
}

function frameChunker(frameRange, chunkSize) {
    frameRange = String(frameRange).trim();
    if (frameRange.length === 0) {
        throw invalidRange(frameRange, "empty range");
    }
    if (!(chunkSize >= 1)) {
        throw new Error(`invalid chunk size, must be positive number: ${chunkSize}`);
    }
    const frames = frameRangeExplode(frameRange);
    if (frames.length === 0) {
        throw invalidRange(frameRange, "empty range");
    }
    const chunks = [];
    for (let i = 0; i < frames.length; i += chunkSize) {
        chunks.push(frameRangeMerge(frames.slice(i, i + chunkSize)));
    }
    return chunks;
}

function frameCount(frameRange) {
    return frameRangeExplode(frameRange).length;
}

// Go layout "2006-01-02_150405", local time.
function formatTimestampLocal(date) {
    const pad = (n) => String(n).padStart(2, "0");
    return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}_` +
        `${pad(date.getHours())}${pad(date.getMinutes())}${pad(date.getSeconds())}`;
}

// google/shlex as used by shellSplit: whitespace-separated words, '...' literal, "..." with
// backslash escapes, backslash escapes outside quotes; an unclosed quote is an error.
function shellSplit(text) {
    const words = [];
    let word = null;
    let i = 0;
    while (i < text.length) {
        const c = text[i];
        if (/\s/.test(c)) {
            if (word !== null) { words.push(word); word = null; }
            i++;
        } else if (c === "'") {
            const end = text.indexOf("'", i + 1);
            if (end < 0) throw new Error("EOF found when expecting closing quote");
            word = (word || "") + text.slice(i + 1, end);
            i = end + 1;
        } else if (c === '"') {
            word = word || "";
            i++;
            while (true) {
                if (i >= text.length) throw new Error("EOF found when expecting closing quote");
                if (text[i] === '"') { i++; break; }
                if (text[i] === "\\" && i + 1 < text.length) { word += text[i + 1]; i += 2; continue; }
                word += text[i++];
            }
        } else if (c === "\\" && i + 1 < text.length) {
            word = (word || "") + text[i + 1];
            i += 2;
        } else {
            word = (word || "") + c;
            i++;
        }
    }
    if (word !== null) words.push(word);
    return words;
}

// --- js_path.go (crosspath): forward-slash paths --------------------------------------------------

const pathModule = {
    basename: (p) => posix.basename(p.replace(/\\/g, "/")),
    dirname: (p) => posix.dirname(p.replace(/\\/g, "/")),
    join: (...parts) => posix.join(...parts.map((p) => String(p).replace(/\\/g, "/"))),
    stem: (p) => { const base = posix.basename(p.replace(/\\/g, "/")); return base.replace(/\.[^.]*$/, ""); },
};

// --- author.go ------------------------------------------------------------------------------------

function makeTask(name, type) {
    name = String(name).trim();
    type = String(type).trim();
    if (name === "") throw new Error("author.Task(name, type): name is required");
    if (type === "") throw new Error("author.Task(name, type): type is required");
    const task = { uuid: crypto.randomUUID(), name, type, priority: 50, commands: [], dependencies: [] };
    task.addCommand = (command) => { task.commands.push(command); };
    task.addDependency = (dependency) => { task.dependencies.push(dependency); };
    return task;
}

const author = {
    Task: makeTask,
    Command: (name, parameters, totalStepCount) =>
        ({ name, parameters, totalStepCount: totalStepCount === undefined ? 0 : totalStepCount }),
};

// --- what a Worker would refuse -------------------------------------------------------------------

function checkStrings(value, what) {
    if (!Array.isArray(value) || !value.every((item) => typeof item === "string")) {
        throw new Error(`${what} must be a list of strings, not ${JSON.stringify(value)}`);
    }
}

function checkCommand(task, command) {
    const p = command.parameters || {};
    const where = `task "${task.name}" command "${command.name}"`;
    if (command.name === "blender-render" || command.name === "exec") {
        if (typeof p.exe !== "string" || p.exe === "") throw new Error(`${where}: missing 'exe'`);
        checkStrings(p.args, `${where}: 'args'`);
    }
    if (command.name === "blender-render") {
        checkStrings(p.argsBefore, `${where}: 'argsBefore'`);
        if (typeof p.blendfile !== "string") throw new Error(`${where}: 'blendfile' must be a string`);
    }
    if (!Number.isInteger(command.totalStepCount) || command.totalStepCount < 0) {
        throw new Error(`${where}: totalStepCount must be a non-negative integer`);
    }
}

// --- the Manager's Compile() ----------------------------------------------------------------------

function compile(scriptPath, request) {
    const logs = [];
    const context = vm.createContext({
        print: (...args) => logs.push(args.map(String).join(" ")),
        alert: (...args) => logs.push("ALERT " + args.map(String).join(" ")),
        frameChunker, frameCount, formatTimestampLocal, shellSplit, author, path: pathModule,
    });
    vm.runInContext(fs.readFileSync(scriptPath, "utf8"), context, { filename: scriptPath });
    const jobType = vm.runInContext("typeof JOB_TYPE === 'undefined' ? undefined : JOB_TYPE", context);
    if (!jobType) throw new Error("script does not define a JOB_TYPE object");
    if (vm.runInContext("typeof compileJob", context) !== "function") {
        throw new Error("script does not define a compileJob(job) function");
    }
    const submitted = request.job;
    const expectedType = posix.basename(scriptPath).replace(/\.js$/, "").replace(/_/g, "-");
    if (submitted.type !== expectedType) {
        throw new Error(`job type "${submitted.type}" is not this script's ("${expectedType}")`);
    }
    // The submitter (Flamenco's Blender add-on) sends defaults for settings it was not given.
    const settings = Object.assign({}, submitted.settings || {});
    for (const setting of jobType.settings) {
        if (!(setting.key in settings) && setting.default !== undefined) settings[setting.key] = setting.default;
        if (setting.required && !(setting.key in settings)) {
            throw new Error(`the job lacks the required setting "${setting.key}"`);
        }
    }
    const tasks = [];
    const job = {
        jobID: crypto.randomUUID(), workerTagUUID: submitted.worker_tag || "", name: submitted.name,
        jobType: submitted.type, priority: submitted.priority, status: "under-construction",
        created: new Date(request.created || Date.now()), settings, metadata: submitted.metadata || {},
        addTask: (task) => { tasks.push(task); },
    };
    vm.runInContext("compileJob", context)(job);
    const known = new Set(tasks.map((task) => task.uuid));
    for (const task of tasks) {
        for (const command of task.commands) checkCommand(task, command);
        for (const dependency of task.dependencies) {
            if (!known.has(dependency.uuid)) {
                throw new Error(`task "${task.name}" depends on "${dependency.name}", which is not in the job`);
            }
        }
    }
    return {
        job_type: Object.assign({ name: expectedType }, jobType),
        settings: job.settings,
        tasks: tasks.map((task) => ({
            uuid: task.uuid, name: task.name, type: task.type, priority: task.priority,
            commands: task.commands.map((c) => ({ name: c.name, parameters: c.parameters, totalStepCount: c.totalStepCount })),
            dependencies: task.dependencies.map((d) => d.uuid),
        })),
        log: logs,
    };
}

function main(argv) {
    try {
        let result;
        if (argv[0] === "compile") {
            result = compile(argv[1], JSON.parse(fs.readFileSync(0, "utf8")));
        } else if (argv[0] === "chunk") {
            result = { chunks: frameChunker(argv[1], Number(argv[2])) };
        } else {
            throw new Error("usage: flamenco_harness.js compile SCRIPT.js < request.json | chunk RANGE SIZE");
        }
        process.stdout.write(JSON.stringify(result));
        return 0;
    } catch (error) {
        process.stdout.write(JSON.stringify({ error: String(error && error.message || error) }));
        return 1;
    }
}

process.exitCode = main(process.argv.slice(2));
