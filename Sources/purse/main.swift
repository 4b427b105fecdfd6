import PurseCLI

await PurseCommand.runMain()
