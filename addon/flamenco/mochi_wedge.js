// SPDX-License-Identifier: GPL-3.0-or-later
//
// Flamenco 3 job type "mochi-wedge": the bakes of a `mochi wedge`, one task per combination, then the
// contact sheet once they are all done. Jobs of this type are written by
//     mochi wedge PRESET --vary friction=0.3,0.5,0.7 --vary seed=1..4 --out DIR --flamenco job.json
// and submitted to the Manager's API (POST /api/v3/jobs); see README.md beside this file.
//
// Each task runs `mochi wedge ... --only K --resume` on a worker: the combination is expanded there by
// the same code as on the submitter, so this script never parses --vary itself. Task types:
//   mochi      CPU bakes and the contact sheet (workers with Mochi installed)
//   mochi-gpu  bakes with the cuda or optix backend: list it on GPU workers only

const JOB_TYPE = {
    label: "Mochi Wedge",
    description: "Bake every combination of a Mochi wedge, then draw its contact sheet",
    settings: [
        { key: "mochi", type: "string", default: "mochi",
          description: "The mochi command on the workers (a path, or a Flamenco variable like {mochi})" },
        { key: "wedge_arguments", type: "string", required: true, editable: false,
          description: "Preset, --vary settings, wedge folder and bake options, as shell words" },
        { key: "variant_count", type: "int32", required: true, editable: false, propargs: { min: 1 },
          description: "Number of combinations in the wedge" },
        { key: "backend", type: "string", required: true, default: "cpu", choices: ["auto", "cpu", "cuda", "optix"],
          editable: false, description: "Mochi backend of the bakes; cuda and optix bakes go to 'mochi-gpu' workers" },
    ]
};

const GPU_BACKENDS = ["cuda", "optix"];

function compileJob(job) {
    const settings = job.settings;
    const count = settings.variant_count;
    if (!Number.isInteger(count) || count < 1) {
        throw `variant_count must be a positive integer, not ${count}`;
    }
    const wedge = ["wedge"].concat(shellSplit(settings.wedge_arguments));
    const bakeType = GPU_BACKENDS.indexOf(settings.backend) >= 0 ? "mochi-gpu" : "mochi";
    const bakes = [];
    for (let k = 1; k <= count; k++) {
        const task = author.Task(`bake-${k}`, bakeType);
        // --resume: a task the Manager requeues continues its cache instead of refusing it.
        task.addCommand(author.Command("exec", {
            exe: settings.mochi,
            args: wedge.concat(["--only", `${k}`, "--resume"]),
        }));
        job.addTask(task);
        bakes.push(task);
    }
    const sheet = author.Task("contact-sheet", "mochi");
    sheet.addCommand(author.Command("exec", { exe: settings.mochi, args: wedge.concat(["--sheet-only"]) }));
    for (const bake of bakes) {
        sheet.addDependency(bake);
    }
    job.addTask(sheet);
}
