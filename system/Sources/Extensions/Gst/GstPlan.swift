/// From the person's setup to a pipeline that may play: the settings checked, the description
/// built, its text and then every element GStreamer made from it checked against the allowed
/// list. Nothing plays before all of it passed; each refusal is a sentence naming what is wrong.
struct GstPlan<Pipeline: GstParsedPipeline> {
    struct Problem: Error, CustomStringConvertible, Equatable {
        let description: String
    }

    let settings: GstSettings
    let text: GstPipelineText
    let pipeline: Pipeline

    /// `parse` makes the pipeline from a description (GStreamer's parser; a fake in tests).
    init(setup: [String: String], parse: (String) throws(GstPipeline.Failure) -> Pipeline) throws(Problem) {
        do {
            settings = try GstSettings(setup: setup)
        } catch {
            throw Problem(description: error.description)
        }
        do {
            try GstAllowedElements.checkText(settings.tail)
        } catch {
            throw Problem(description: error.description)
        }
        text = GstPipelineText(settings: settings)
        let parsed: Pipeline
        do {
            parsed = try parse(text.description)
        } catch {
            throw Problem(description: Self.explain(error, key: settings.key))
        }
        do {
            try GstAllowedElements.check(parsed.elements, head: text.head, directory: settings.directory)
        } catch {
            throw Problem(description: GstPipelineText.redacting(error.description, key: settings.key))
        }
        pipeline = parsed
    }

    /// A parse failure as the person can act on it: an element that is not allowed (its plugin
    /// is never loaded, so GStreamer says it has none) is named as refused; one that is allowed
    /// but not installed names its absence; anything else is a malformed pipeline.
    static func explain(_ failure: GstPipeline.Failure, key: String?) -> String {
        if let refused = failure.missing.first(where: { !GstAllowedElements.all.contains($0) }) {
            return "the pipeline holds '\(refused)', which the gst extension does not allow. Allowed: \(GstAllowedElements.listed)"
        }
        if let absent = failure.missing.first {
            return "GStreamer has no element '\(absent)' on this machine: install the plugin package that has it"
        }
        return "the pipeline is malformed: " + GstPipelineText.redacting(failure.description, key: key)
    }
}

/// What the plan needs of a parsed pipeline: its elements.
protocol GstParsedPipeline {
    var elements: [GstParsedElement] { get }
}

extension GstPipeline: GstParsedPipeline {}
