import Foundation
import MeowCtlKit

exit(await MeowCtl.main(Array(CommandLine.arguments.dropFirst())))
