// SPDX-License-Identifier: GPL-3.0-or-later
//
// Flamenco 3 job type "mochi-bake-render": bake the Mochi simulation of a .blend once, then render its
// frames in chunks that wait for the bake. Install: copy this file into the `scripts` folder beside
// the flamenco-manager executable and restart the Manager (see README.md beside this file).
//
// The settings with an `eval` are read from the .blend by Flamenco's Blender add-on when the job is
// submitted: the frame range, the Mochi cache folder and backend, the scene and the image format.
//
// Task types decide which workers take a task (each worker lists the types it runs in its
// flamenco-worker.yaml `task_types`):
//   blender    the renders, and the bake with the cpu or auto backend
//   mochi-gpu  the bake with the cuda or optix backend: list it on GPU workers only
// A job-wide worker tag (chosen in the submit panel) narrows the whole job further.

const JOB_TYPE = {
    label: "Mochi Bake and Render",
    description: "Bake the Mochi grains of the scene once, then render the frames in chunks",
    settings: [
        // Settings for artists to determine:
        { key: "frames", type: "string", required: true,
          eval: "f'{C.scene.frame_start}-{C.scene.frame_end}'",
          evalInfo: { showLinkButton: true, description: "Scene frame range" },
          description: "Frames to render, e.g. '1-250' or '1-10,20'; the bake covers the scene's Mochi range" },
        { key: "chunk_size", type: "int32", default: 4, propargs: { min: 1 }, visible: "submission",
          description: "Frames rendered by one task" },
        { key: "bake_mode", type: "string", default: "bake", choices: ["bake", "resume", "none"],
          visible: "submission",
          description: "bake: a new bake (the cache folder must hold none); resume: continue the cache's bake; " +
                       "none: render the cache as it is" },
        { key: "render_output_root", type: "string", subtype: "dir_path", required: true, visible: "submission",
          description: "Base folder of the render output; job-specific parts are appended" },
        { key: "add_path_components", type: "int32", required: true, default: 0, propargs: { min: 0, max: 32 },
          visible: "submission",
          description: "Number of path components of the blend file to use in the render output path" },
        { key: "render_output_path", type: "string", subtype: "file_path", editable: false,
          eval: "str(Path(abspath(settings.render_output_root), last_n_dir_parts(settings.add_path_components), jobname, '{timestamp}', '######'))",
          description: "Final file path of the rendered frames" },

        // Read from the .blend at submission:
        { key: "cache_folder", type: "string", subtype: "dir_path", required: true,
          eval: "str(abspath(C.scene.mochi.cache_directory))", visible: "web",
          description: "The scene's Mochi cache folder, absolute; it must be on storage every worker sees" },
        { key: "backend", type: "string", required: true, choices: ["auto", "cpu", "cuda", "optix"],
          eval: "C.scene.mochi.backend", visible: "web",
          description: "Mochi backend of the bake; cuda and optix bakes go to 'mochi-gpu' workers" },
        { key: "blendfile", type: "string", required: true, visible: "web",
          description: "Path of the blend file (set by the Flamenco add-on)" },
        { key: "format", type: "string", required: true, eval: "C.scene.render.image_settings.file_format",
          visible: "web" },
        { key: "scene", type: "string", required: true, eval: "C.scene.name", visible: "web",
          description: "Name of the scene to bake and render" },
    ]
};

const BAKE_MODES = ["bake", "resume", "none"];
const GPU_BACKENDS = ["cuda", "optix"];

function compileJob(job) {
    const settings = job.settings;
    if (BAKE_MODES.indexOf(settings.bake_mode) < 0) {
        throw `bake_mode must be one of ${BAKE_MODES.join(", ")}, not "${settings.bake_mode}"`;
    }
    if (!settings.cache_folder) {
        throw "The scene has no Mochi cache folder; choose one in the Mochi bake panel";
    }
    const renderOutput = renderOutputPath(job);
    settings.render_output_path = renderOutput; // the job shows the path actually used

    const bakeTask = settings.bake_mode === "none" ? null : authorBakeTask(settings);
    if (bakeTask) {
        job.addTask(bakeTask);
    }
    for (const renderTask of authorRenderTasks(settings, renderOutput)) {
        if (bakeTask) {
            renderTask.addDependency(bakeTask);
        }
        job.addTask(renderTask);
    }
}

// Background mode with script auto-run off (never "-y", see authorBakeTask).
const BLENDER_ARGS = "-b --disable-autoexec";

// The task type of a bake: GPU bakes only on workers that list 'mochi-gpu'.
function bakeTaskType(backend) {
    return GPU_BACKENDS.indexOf(backend) >= 0 ? "mochi-gpu" : "blender";
}

// `blender -b --disable-autoexec FILE.blend --command mochi bake ...`: the same bake as the Bake button;
// it saves the job's copy of the .blend with its playback object, which the render tasks then open.
// The Manager's {blenderArgs} is "-b -y" by default, and -y would run any Python a submitted .blend
// carries (drivers, registered text blocks) on every worker: Mochi needs none, so script auto-run is
// kept off explicitly instead.
function authorBakeTask(settings) {
    const task = author.Task("mochi-bake", bakeTaskType(settings.backend));
    let args = ["--command", "mochi", "bake", "--out", settings.cache_folder, "--backend", settings.backend];
    if (settings.bake_mode === "resume") {
        args.push("--resume");
    }
    task.addCommand(author.Command("blender-render", {
        exe: "{blender}",
        exeArgs: BLENDER_ARGS,
        argsBefore: [],
        blendfile: settings.blendfile,
        args: args,
    }));
    return task;
}

function authorRenderTasks(settings, renderOutput) {
    const renderDir = path.dirname(renderOutput);
    const tasks = [];
    for (const chunk of frameChunker(settings.frames, settings.chunk_size)) {
        const task = author.Task(`render-${chunk}`, "blender");
        task.addCommand(author.Command("blender-render", {
            exe: "{blender}",
            exeArgs: BLENDER_ARGS,
            argsBefore: [],
            blendfile: settings.blendfile,
            args: [
                "--scene", settings.scene,
                "--render-output", path.join(renderDir, path.basename(renderOutput)),
                "--render-format", settings.format,
                "--render-frame", chunk.replaceAll("-", ".."), // Blender's frame-range notation
            ],
        }, frameCount(chunk)));
        tasks.push(task);
    }
    return tasks;
}

// '{timestamp}' in the render output path becomes the job's creation time.
function renderOutputPath(job) {
    const template = job.settings.render_output_path;
    if (!template) {
        throw "no render_output_path setting";
    }
    return template.replace(/{([^}]+)}/g, (match, name) =>
        name === "timestamp" ? formatTimestampLocal(job.created) : match);
}
