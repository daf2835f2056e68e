import Foundation
import MeowWire

/// One self-contained HTML page from a report's sources: the data as JSON inside the page, the
/// page's CSS and JavaScript (Assets/, embedded at build time) inline. It opens from disk with
/// no server, network or other file.
public enum ReportPage {
    public static func html(_ sources: ReportSources) -> String {
        let data: JSONValue = [
            "title": .string(sources.title),
            "requests": .array(sources.requests),
            "frames": .array(sources.frames),
            "framesStart": sources.framesStart.map { .double($0) } ?? .null,
            "logs": .array(sources.logs.map { ["service": .string($0.service), "lines": .array($0.lines)] }),
            "history": .array(sources.history),
            "failures": .array(sources.failures),
            "deviceUsers": .object(sources.deviceUsers.mapValues { .string($0) }),
        ]
        let json = (try? JSONTextEncoder().text(data)) ?? "{}"
        return """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
        <title>\(escapeHTML(sources.title)) — MeowCare report</title>
        <style>\(text(PackageResources.report_css))</style>
        </head>
        <body>
        <header>
        <h1>\(escapeHTML(sources.title))</h1>
        <span id="summary"></span>
        <label>View as user <select id="user"><option value="">everyone</option></select></label>
        <label>Find <input id="find" type="search" placeholder="op, user, record, code"></label>
        </header>
        <section id="failures"></section>
        <section id="timeline"><h2>Timeline</h2><div id="lanehead"></div>
        <div id="scroller"><div id="spacer"><div id="rows"></div></div></div>
        <div id="detail"><span class="none">Click a request to see its permission decisions and its JSON.</span></div></section>
        <section id="refusals"><h2>Refusals: each permission decision and its reason</h2><div id="refusal-list"></div></section>
        <section id="conflicts"><h2>Conflicts: the server's, the client's and the ancestor's values, and what the merge kept</h2><div id="conflict-list"></div></section>
        <section id="shares"><h2>Share lifecycle</h2><div id="share-list"></div></section>
        <section id="records"><h2>Records</h2><select id="record"></select><div id="record-view"></div></section>
        <footer id="stats"></footer>
        <script type="application/json" id="meow-data">\(scriptSafe(json))</script>
        <script>\(text(PackageResources.report_js))</script>
        </body>
        </html>

        """
    }

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// JSON inside a script element: `</` would end the element, `<!--` would start a comment.
    static func scriptSafe(_ json: String) -> String {
        json.replacingOccurrences(of: "</", with: "<\\/").replacingOccurrences(of: "<!--", with: "<\\!--")
    }

    static func escapeHTML(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
